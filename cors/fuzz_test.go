package cors

import "testing"

// FuzzDecode: Decode never panics, and whatever it accepts has a
// canonical form that decodes to itself and matches without panicking.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`<CORSConfiguration><CORSRule><AllowedOrigin>*</AllowedOrigin><AllowedMethod>GET</AllowedMethod></CORSRule></CORSConfiguration>`))
	f.Add([]byte(`<CORSConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><CORSRule><ID>a</ID><AllowedOrigin>http://*.x</AllowedOrigin><AllowedMethod>PUT</AllowedMethod><AllowedHeader>x-amz-*</AllowedHeader><ExposeHeader>ETag</ExposeHeader><MaxAgeSeconds>5</MaxAgeSeconds></CORSRule></CORSConfiguration>`))
	f.Add([]byte(`<CORSConfiguration><CORSRule><AllowedMethod>PATCH</AllowedMethod></CORSRule></CORSConfiguration>`))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := Decode(b)
		if err != nil {
			return
		}
		roundTrip(t, c)
		c.Match(Request{Origin: "http://a.x", Method: "PUT", Headers: []string{"x-amz-date"}})
	})
}
