"""boto3 with Signature Version 2 ("s3") against a gateway, run by
TestSigV2Boto3: python3 boto3_sigv2.py ENDPOINT BUCKET KEY AK SECRET [TOKEN]

Puts KEY, reads it back, lists it, and prints a presigned GET URL (the
default presign of an "s3"-signed client) for the test to fetch."""
import sys

import boto3
from botocore.config import Config

endpoint, bucket, key, ak, secret = sys.argv[1:6]
token = sys.argv[6] if len(sys.argv) > 6 else None
s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                  aws_access_key_id=ak, aws_secret_access_key=secret, aws_session_token=token,
                  config=Config(signature_version="s3", s3={"addressing_style": "path"},
                                retries={"max_attempts": 1}))
body = b"boto3 signed this with HMAC-SHA1"
s3.put_object(Bucket=bucket, Key=key, Body=body, ContentType="text/plain", Metadata={"via": "boto3"})
got = s3.get_object(Bucket=bucket, Key=key)
assert got["Body"].read() == body, "read back other bytes"
assert got["Metadata"].get("via") == "boto3", got["Metadata"]
keys = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket, Prefix=key).get("Contents", [])]
assert keys == [key], keys
print(s3.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": key}, ExpiresIn=300))
