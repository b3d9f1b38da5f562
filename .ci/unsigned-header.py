"""Fetches a presigned URL with an x-nas-branch header the signature does
not cover: the gateway must refuse it (403, "not signed"), and the URL
alone must still work."""
import sys
import urllib.error
import urllib.request

url = sys.argv[1]
try:
    urllib.request.urlopen(urllib.request.Request(url, headers={"x-nas-branch": "main"}))
    sys.exit("answered 200 to an unsigned x-nas-branch header")
except urllib.error.HTTPError as e:
    body = e.read().decode()
    if e.code != 403 or "not signed" not in body:
        sys.exit("answered %d: %s" % (e.code, body))
urllib.request.urlopen(url).read()
