"""Prints the botocore HmacV1Auth / HmacV1QueryAuth vectors of
botocore_test.go, offline: python3 botocore_vectors.py

Each vector is a request, the string to sign botocore built for it and
the signature (header form) or the URL (query form)."""
import json

from botocore.auth import HmacV1Auth, HmacV1QueryAuth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

DATE = "Tue, 27 Mar 2007 19:36:42 GMT"
EXPIRES = "1175139620"
OWNER = Credentials("AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")
LEASE = Credentials("ASIATEMPORARY0000001", "lease/secret/0123456789", "token.with+slash/and=eq")


class Header(HmacV1Auth):
    def _get_date(self):
        return DATE


class Query(HmacV1QueryAuth):
    def _get_date(self):
        return EXPIRES


def header(name, method, url, headers=(), creds=OWNER, auth_path=None):
    req = AWSRequest(method=method, url=url)
    for k, v in headers:
        req.headers[k] = v
    req.auth_path = auth_path
    signer = Header(creds)
    signer.add_auth(req)
    split = __import__("urllib.parse").parse.urlsplit(req.url)
    sts = signer.canonical_string(method, split, req.headers, auth_path=auth_path)
    out = {"name": name, "method": method, "url": req.url, "auth_path": auth_path,
           "headers": [[k, v] for k, v in req.headers.items()], "sts": sts}
    print(json.dumps(out))


def query(name, method, url, headers=(), creds=OWNER, expires=3600):
    req = AWSRequest(method=method, url=url)
    for k, v in headers:
        req.headers[k] = v
    signer = Query(creds, expires)
    orig = __import__("urllib.parse").parse.urlsplit(url)
    signer.add_auth(req)
    print(json.dumps({"name": name, "method": method, "url": req.url,
                      "headers": [[k, v] for k, v in req.headers.items() if k != "Date"]}))


header("get", "GET", "http://127.0.0.1:9000/photos/puppy.jpg")
header("put", "PUT", "http://127.0.0.1:9000/photos/puppy.jpg",
       [("Content-Type", "image/jpeg"), ("Content-MD5", "4gJE4saaMU4BqNR0kLY+lw=="),
        ("x-amz-meta-Reviewer", " Joe "), ("X-Amz-Acl", "public-read")])
header("subresources", "GET",
       "http://127.0.0.1:9000/b/k%20x?versionId=v%2F1&prefix=p&acl&response-content-type=text%2Fplain&uploadId=u")
header("lease", "PUT", "http://127.0.0.1:9000/b/k", [("x-amz-meta-a", "1")], creds=LEASE)
# A client's bucket-level request: botocore's S3 authPath adds the slash.
header("bucket", "GET", "http://127.0.0.1:9000/door_seed?list-type=2&prefix=a%2Bb&encoding-type=url",
       auth_path="/door_seed/")
header("vhost", "GET", "http://bucket.nas.test:9000/a/b.txt", auth_path="/bucket/a/b.txt")
header("vhost-root", "GET", "http://bucket.nas.test:9000/?location", auth_path="/bucket/")
query("presign", "GET", "http://127.0.0.1:9000/photos/puppy.jpg")
query("presign-lease", "GET", "http://127.0.0.1:9000/b/dir/a%2Bb.txt?response-content-disposition=attachment", creds=LEASE)
query("presign-put", "PUT", "http://127.0.0.1:9000/b/k", [("Content-Type", "text/plain"), ("x-amz-meta-x", "y")])
