// Package secret finds content that looks like credentials, so the
// gateway can give an object the sensitivity label "secret" as it is
// written. It is a leaf: it imports nothing of ours and makes no
// outbound calls.
//
// # Vocabulary
//
// A Scanner is an io.Writer that an upload is copied through; after the
// last Write, Found and Rules say whether and which rules matched. A rule
// has a stable name (the names below) and a regular
// expression (Go's RE2, linear in its input). A trigger is a literal of a
// rule together with one of its rarer bytes: the scanner looks for those
// bytes with bytes.IndexByte, checks the literal around each, and only
// then runs the rule's expression, anchored at the literal, on at most
// WindowRight bytes. Plain text therefore costs a few IndexByte passes,
// not a regular expression. Every match is at least 15 bytes of ASCII
// around its trigger byte, so those passes run only over runs of ASCII
// that hold an aligned 8-byte word of it, found by testing 8 bytes at a
// time: high-entropy data (archives, model weights, media) has such a
// word once in about 2 KiB, where it has a trigger byte every 43.
//
// # Rules
//
//   - aws-access-key-id: "AKIA" (long-term) or "ASIA" (temporary, as this
//     gateway's leases issue) and 16 upper-case letters or digits, as a
//     whole word. The shape is fixed by AWS, so false positives are rare.
//   - aws-secret-access-key: a key whose name ends like
//     aws_secret_access_key or SecretAccessKey (any case, "_" and "-"
//     ignored) assigned with "=", ":=", ":" or "=>" a 40-character base64
//     value, quoted or not.
//   - private-key: a PEM or PGP armour header "-----BEGIN ... PRIVATE
//     KEY-----" (plain, RSA, EC, DSA, OPENSSH, ENCRYPTED, or "PGP PRIVATE
//     KEY BLOCK"). Public keys and certificates do not match.
//   - github-token: GitHub's prefixed tokens ghp_, gho_, ghu_, ghs_, ghr_
//     and 36 or more letters or digits, and fine-grained github_pat_
//     tokens (22 or more characters after the prefix).
//   - slack-token: xoxa-, xoxb-, xoxp-, xoxr- and xoxs- tokens with 10 or
//     more characters after the dash.
//   - stripe-live-key: sk_live_ and rk_live_ (secret and restricted live
//     keys) with 24 or more letters or digits. Test keys (sk_test_) do not
//     match: they move no money.
//   - google-api-key: "AIza" and 35 base64url characters, the shape of
//     Google Cloud API keys.
//   - jwt: a JSON Web Token's header and payload, "eyJ" (base64url of
//     `{"`) and 8 or more base64url characters, a dot, and "eyJ" again
//     with 8 or more. The signature is not required, so unsigned tokens
//     and tokens whose payload runs past the window still match.
//   - nas-mcp-token: this gateway's own MCP bearer tokens, "nasmcp_" and
//     43 base64url characters (see auth.MCPTokenPrefix).
//   - generic-assignment: a key whose name ends in password, passwd,
//     secret, secretkey, apikey, accesskey or token (any case, "_" and
//     "-" ignored, so API_KEY, apiKey and client-secret count) assigned
//     with "=", ":=", ":" or "=>" a value that is either quoted with 8 to
//     128 characters and no blank, or unquoted with 24 to 128 base64 or
//     hex characters. The value must hold a letter and a digit, which
//     rejects names (`Code = "ExpiredToken"`), dates and numbers, and must
//     not be a reference or placeholder (no $, {, <; not containing
//     "example", "your", "xxxx", "****" or "..."), so `password:
//     ${DB_PASSWORD}` and `token = "<your token>"` in documentation are
//     not secrets. This is the rule most prone to false positives, which
//     matter: a false label hides data from leases. It misses passwords
//     without a digit, such as "correcthorsebattery".
//
// # Streaming and memory
//
// Write copies into a fixed buffer of 32 KiB+WindowLeft+WindowRight
// bytes and scans it each time it fills, keeping the last
// WindowLeft+WindowRight bytes for the next chunk, so a match that spans
// two writes is found and memory stays the same whatever the object's
// size. Chunks fall at the same stream offsets however the data is cut
// into writes, so the answer does not depend on write sizes. Once a chunk
// has matched, later writes are ignored: the object is secret whatever
// follows. A match longer than the window (a secret over about
// WindowRight bytes from its trigger) may be missed.
//
// # Pieces and joints
//
// A stream stored as pieces scanned one at a time (the parts of a
// multipart upload, the segments of a compose) can hide a credential
// across a joint. Edge bytes on each side of a joint are enough to find
// it: a caller keeps a piece's first and last Edge bytes, writes them
// with Gap between (a piece of at most 2*Edge bytes whole), and Found
// then reports what a scan of the whole stream would find in the
// windows that do not reach into a gap.
//
// The scanner records rule names only; it never stores, returns or logs
// the matched bytes. A Scanner is not safe for concurrent use.
package secret
