package s3api

import (
	"encoding/xml"
	"net/http"
	"strconv"
	"strings"

	"github.com/agentnas/nas/manifest"
)

// objectAttributes is the set of attributes a GetObjectAttributes asks
// for (x-amz-object-attributes).
type objectAttributes struct {
	etag, checksum, parts, storageClass, size bool
}

// parseObjectAttributes reads x-amz-object-attributes: a comma-separated
// list of ETag, Checksum, ObjectParts, StorageClass and ObjectSize, in one
// or several headers. It is required.
func parseObjectAttributes(h http.Header) (objectAttributes, error) {
	var a objectAttributes
	names := strings.Split(strings.Join(h.Values("x-amz-object-attributes"), ","), ",")
	n := 0
	for _, name := range names {
		switch strings.ToLower(strings.TrimSpace(name)) {
		case "":
			continue
		case "etag":
			a.etag = true
		case "checksum":
			a.checksum = true
		case "objectparts":
			a.parts = true
		case "storageclass":
			a.storageClass = true
		case "objectsize":
			a.size = true
		default:
			return a, errInvalidArgument("Invalid attribute name specified.")
		}
		n++
	}
	if n == 0 {
		return a, errInvalidRequest("The x-amz-object-attributes header specifying the attributes to be retrieved is either missing or empty")
	}
	return a, nil
}

// partsPage is the page of parts a GetObjectAttributes asks for:
// x-amz-max-parts (default and at most 1000) after
// x-amz-part-number-marker.
type partsPage struct{ max, marker int }

func parsePartsPage(h http.Header) (partsPage, error) {
	p := partsPage{max: 1000}
	if v := h.Get("x-amz-max-parts"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return p, errInvalidArgument("x-amz-max-parts must be a non-negative integer")
		}
		p.max = min(n, 1000)
	}
	if v := h.Get("x-amz-part-number-marker"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > 10000 {
			return p, errInvalidArgument("x-amz-part-number-marker must be an integer between 0 and 10000")
		}
		p.marker = n
	}
	return p, nil
}

// attributesResponse is the GetObjectAttributesResponse document; only
// the attributes asked for are present.
type attributesResponse struct {
	XMLName      xml.Name     `xml:"GetObjectAttributesResponse"`
	Xmlns        string       `xml:"xmlns,attr"`
	ETag         string       `xml:"ETag,omitempty"` // without quotes
	Checksum     *checksumDoc `xml:"Checksum,omitempty"`
	ObjectParts  *partsDoc    `xml:"ObjectParts,omitempty"`
	StorageClass string       `xml:"StorageClass,omitempty"`
	ObjectSize   *int64       `xml:"ObjectSize,omitempty"`
}

// partsDoc is the ObjectParts element: a page of a multipart object's
// parts. PartsCount is the SDKs' TotalPartsCount.
type partsDoc struct {
	PartsCount           int              `xml:"PartsCount"`
	PartNumberMarker     int              `xml:"PartNumberMarker"`
	NextPartNumberMarker int              `xml:"NextPartNumberMarker"`
	MaxParts             int              `xml:"MaxParts"`
	IsTruncated          bool             `xml:"IsTruncated"`
	Parts                []attributesPart `xml:"Part"`
}

// attributesPart is one Part of ObjectParts.
type attributesPart struct {
	checksumDoc
	PartNumber int   `xml:"PartNumber"`
	Size       int64 `xml:"Size"`
}

// getObjectAttributes answers GetObjectAttributes: what HeadObject and
// ListParts would tell of one version, in one document, without its bytes.
func (s *Server) getObjectAttributes(req *request) error {
	attrs, err := parseObjectAttributes(req.r.Header)
	if err != nil {
		return err
	}
	page, err := parsePartsPage(req.r.Header)
	if err != nil {
		return err
	}
	e, err := s.readVersion(req)
	if err != nil {
		return err
	}
	doc := attributesResponse{Xmlns: s3ns}
	if attrs.parts {
		if doc.ObjectParts, err = s.partsOf(req, e, page); err != nil {
			return err
		}
	}
	attrs.fill(&doc, e)
	req.w.Header().Set("Last-Modified", httpTime(e.ModTime))
	return s.writeXML(req, http.StatusOK, doc)
}

// fill sets the attributes a asks for, but the parts, from e.
func (a objectAttributes) fill(doc *attributesResponse, e *manifest.Entry) {
	if a.etag {
		doc.ETag = e.ETag
	}
	if a.checksum && e.ChecksumAlgorithm != "" {
		c := checksumsOf(e)
		doc.Checksum = &c
	}
	if a.storageClass {
		doc.StorageClass = "STANDARD"
	}
	if a.size {
		doc.ObjectSize = &e.Size
	}
}

// partsOf is the page of e's parts; nil for an object stored whole,
// which S3 describes without ObjectParts.
func (s *Server) partsOf(req *request, e *manifest.Entry, page partsPage) (*partsDoc, error) {
	c, err := s.contentOf(req, e)
	if err != nil || len(c.Parts) == 0 {
		return nil, err
	}
	d := &partsDoc{PartsCount: len(c.Parts), PartNumberMarker: page.marker, MaxParts: page.max, Parts: []attributesPart{}}
	for i := page.marker; i < len(c.Parts); i++ {
		if len(d.Parts) == page.max {
			d.IsTruncated = true
			break
		}
		p := attributesPart{PartNumber: i + 1, Size: c.Parts[i].Size}
		if sum := c.Parts[i].Checksum; sum != "" {
			// A part's checksum is of the object's algorithm; parts have
			// no checksum type.
			p.checksumDoc = checksumsOf(&manifest.Entry{ChecksumAlgorithm: e.ChecksumAlgorithm, ChecksumValue: sum})
		}
		d.Parts = append(d.Parts, p)
		d.NextPartNumberMarker = p.PartNumber
	}
	return d, nil
}
