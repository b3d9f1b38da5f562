package s3api

import (
	"fmt"
	"net/http"
)

// route is what a request asks for: the S3 operation (by its AWS API
// name, the access log's and the metrics' label) and the handler that
// serves it. This is the one place that tells operations apart.
type route struct {
	op    string
	serve func(*request) error
	// outside: served before the door (a CORS preflight, a POST form
	// that the handler authenticates itself).
	outside bool
	// target: the bucket must be a repository name and the key within
	// S3's length limit before serve runs.
	target bool
}

// opUnknown names a request that is no S3 operation we serve.
const opUnknown = "unknown"

// answer is a handler that answers err.
func answer(err error) func(*request) error { return func(*request) error { return err } }

// route finds req's operation from its method, subresources and target.
func (s *Server) route(req *request) route {
	r, q := req.r, req.query
	if r.Method == http.MethodOptions {
		// A browser sends its CORS preflight without credentials, so it
		// cannot be authenticated: preflight reads the bucket's CORS
		// document and nothing else (no object, no lease, no budget).
		return route{op: "PreflightCORS", serve: s.preflight, outside: true}
	}
	if boundary, ok := formBoundary(req); ok {
		return route{op: "PostObject", outside: true, serve: func(req *request) error {
			s.corsHeaders(req, nil)
			return s.postObject(req, boundary)
		}}
	}
	for _, sub := range unsupported {
		if q.Has(sub) {
			return route{op: "NotImplemented",
				serve: answer(errNotImplemented(fmt.Sprintf("the %q subresource is not implemented by this gateway", sub)))}
		}
	}
	if req.bucket == "" {
		if r.Method == http.MethodGet {
			return route{op: "ListBuckets", serve: s.listBuckets}
		}
		return methodNotAllowed()
	}
	var rt route
	switch {
	case req.hasKey && req.query.Has("cors"), !req.hasKey && req.query.Has("attributes"):
		// A sub-resource of the other kind of target: refused, never read
		// as the plain object or bucket call (a PUT would overwrite).
		rt = route{op: opUnknown, serve: answer(errInvalidRequest("this sub-resource does not apply to this target"))}
	case req.hasKey:
		rt = s.objectRoute(req)
	default:
		rt = s.bucketRoute(req)
	}
	rt.target = true
	return rt
}

// methodNotAllowed is the route of a method a resource does not take.
func methodNotAllowed() route {
	return route{op: opUnknown, serve: answer(errMethodNotAllowed("The specified method is not allowed against this resource."))}
}

func (s *Server) bucketRoute(req *request) route {
	switch req.r.Method {
	case http.MethodGet:
		return s.bucketGetRoute(req)
	case http.MethodHead:
		return route{op: "HeadBucket", serve: s.headBucket}
	case http.MethodPut:
		return s.bucketPutRoute(req)
	case http.MethodDelete:
		q := req.query
		switch {
		case q.Has("tagging"):
			return route{op: "DeleteBucketTagging", serve: func(req *request) error { return s.putBucketTagging(req, true) }}
		case q.Has("cors"):
			return route{op: "DeleteBucketCors", serve: func(req *request) error { return s.putBucketCors(req, true) }}
		}
		return route{op: "DeleteBucket", serve: s.deleteBucket}
	case http.MethodPost:
		if req.query.Has("delete") {
			return route{op: "DeleteObjects", serve: s.deleteObjects}
		}
		return route{op: opUnknown, serve: answer(errInvalidRequest("a POST to a bucket is an upload form (multipart/form-data, signed by its policy, without an Authorization header) or ?delete"))}
	}
	return methodNotAllowed()
}

func (s *Server) bucketGetRoute(req *request) route {
	q := req.query
	switch {
	case q.Has("versioning"):
		return route{op: "GetBucketVersioning", serve: s.getVersioning}
	case q.Has("location"):
		return route{op: "GetBucketLocation", serve: s.getLocation}
	case q.Has("acl"):
		return route{op: "GetBucketAcl", serve: s.getBucketACL}
	case q.Has("tagging"):
		return route{op: "GetBucketTagging", serve: s.getBucketTagging}
	case q.Has("cors"):
		return route{op: "GetBucketCors", serve: s.getBucketCors}
	case q.Has("uploads"):
		return route{op: "ListMultipartUploads", serve: s.listUploads}
	case q.Has("versions"):
		return route{op: "ListObjectVersions", serve: s.listVersions}
	case q.Get("list-type") == "2":
		return route{op: "ListObjectsV2", serve: func(req *request) error { return s.listObjects(req, true) }}
	}
	return route{op: "ListObjects", serve: func(req *request) error { return s.listObjects(req, false) }}
}

func (s *Server) bucketPutRoute(req *request) route {
	q := req.query
	switch {
	case q.Has("versioning"):
		return route{op: "PutBucketVersioning", serve: s.putVersioning}
	case q.Has("acl"):
		return route{op: "PutBucketAcl", serve: s.putBucketACL}
	case q.Has("tagging"):
		return route{op: "PutBucketTagging", serve: func(req *request) error { return s.putBucketTagging(req, false) }}
	case q.Has("cors"):
		return route{op: "PutBucketCors", serve: func(req *request) error { return s.putBucketCors(req, false) }}
	}
	return route{op: "CreateBucket", serve: s.createBucket}
}

func (s *Server) objectRoute(req *request) route {
	r, q := req.r, req.query
	switch r.Method {
	case http.MethodGet:
		switch {
		case q.Has("uploadId"):
			return route{op: "ListParts", serve: s.listParts}
		case q.Has("acl"):
			return route{op: "GetObjectAcl", serve: s.getObjectACL}
		case q.Has("tagging"):
			return route{op: "GetObjectTagging", serve: s.getObjectTagging}
		case q.Has("attributes"):
			return route{op: "GetObjectAttributes", serve: s.getObjectAttributes}
		}
		return route{op: "GetObject", serve: func(req *request) error { return s.getObject(req, false) }}
	case http.MethodHead:
		return route{op: "HeadObject", serve: func(req *request) error { return s.getObject(req, true) }}
	case http.MethodPut:
		return s.objectPutRoute(req)
	case http.MethodDelete:
		switch {
		case q.Has("tagging"):
			return route{op: "DeleteObjectTagging", serve: func(req *request) error { return s.putObjectTagging(req, true) }}
		case q.Has("uploadId"):
			return route{op: "AbortMultipartUpload", serve: s.abortUpload}
		}
		return route{op: "DeleteObject", serve: s.deleteObject}
	case http.MethodPost:
		switch {
		case q.Has("uploads"):
			return route{op: "CreateMultipartUpload", serve: s.createUpload}
		case q.Has("uploadId"):
			return route{op: "CompleteMultipartUpload", serve: s.completeUpload}
		}
		return route{op: "NotImplemented", serve: answer(errNotImplemented("this POST operation is not implemented"))}
	}
	return methodNotAllowed()
}

func (s *Server) objectPutRoute(req *request) route {
	r, q := req.r, req.query
	copySource := r.Header.Get("x-amz-copy-source") != ""
	switch {
	case q.Has("tagging"):
		return route{op: "PutObjectTagging", serve: func(req *request) error { return s.putObjectTagging(req, false) }}
	case (q.Has("uploadId") || q.Has("partNumber")) && copySource:
		return route{op: "UploadPartCopy", serve: s.uploadPartCopy}
	case q.Has("uploadId") || q.Has("partNumber"):
		return route{op: "UploadPart", serve: s.uploadPart}
	case q.Has("acl"):
		return route{op: "PutObjectAcl", serve: s.putObjectACL}
	case copySource:
		return route{op: "CopyObject", serve: s.copyObject}
	}
	return route{op: "PutObject", serve: s.putObject}
}
