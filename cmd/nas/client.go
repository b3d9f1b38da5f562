package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/spf13/cobra"
)

// clientFlags are the credentials and endpoint of every client command.
type clientFlags struct {
	endpoint, accessKey, secretKey, sessionToken string
	leaseJSON                                    string
	json                                         bool
}

var cf clientFlags

func addClientFlags(root *cobra.Command) {
	f := root.PersistentFlags()
	f.StringVar(&cf.endpoint, "endpoint", "", "gateway URL (default $NAS_ENDPOINT, $AWS_ENDPOINT_URL, http://127.0.0.1:9000)")
	f.StringVar(&cf.accessKey, "access-key", "", "access key (default $NAS_ACCESS_KEY, $AWS_ACCESS_KEY_ID)")
	f.StringVar(&cf.secretKey, "secret-key", "", "secret key (default $NAS_SECRET_KEY, $AWS_SECRET_ACCESS_KEY)")
	f.StringVar(&cf.sessionToken, "session-token", "", "session token (default $NAS_SESSION_TOKEN, $AWS_SESSION_TOKEN)")
	f.StringVar(&cf.leaseJSON, "lease-json", "", "use the credentials and endpoint of this lease file (the output of `nas lease create --json`)")
	f.BoolVar(&cf.json, "json", false, "print JSON")
}

func firstOf(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}

// client calls the control API.
type client struct {
	endpoint string
	creds    aws.Credentials
	http     *http.Client
	signer   *v4.Signer
}

// dataDirCredentials reads the owner's generated credentials from the
// default data directory, so a newcomer's CLI works next to `nas serve`.
func dataDirCredentials() (string, string) {
	b, err := os.ReadFile("nas-data/credentials")
	if err != nil {
		return "", ""
	}
	var c struct {
		AccessKey string `json:"access_key"`
		SecretKey string `json:"secret_key"`
	}
	if json.Unmarshal(b, &c) != nil {
		return "", ""
	}
	return c.AccessKey, c.SecretKey
}

// leaseFile is the part of a lease JSON file a client needs.
type leaseFile struct {
	Endpoint     string `json:"endpoint"`
	AccessKeyID  string `json:"access_key_id"`
	Secret       string `json:"secret_access_key"`
	SessionToken string `json:"session_token"`
}

func newClient() (*client, error) {
	if cf.leaseJSON != "" {
		b, err := os.ReadFile(cf.leaseJSON)
		if err != nil {
			return nil, err
		}
		var lf leaseFile
		if err := json.Unmarshal(b, &lf); err != nil || lf.AccessKeyID == "" || lf.Secret == "" {
			return nil, usagef("--lease-json %s: not a lease file with credentials", cf.leaseJSON)
		}
		cf.accessKey, cf.secretKey, cf.sessionToken = lf.AccessKeyID, lf.Secret, lf.SessionToken
		if cf.endpoint == "" {
			cf.endpoint = lf.Endpoint
		}
	}
	// Key, secret and token come as a set from one source: flags, then
	// NAS_*, then AWS_*.
	ak, sk, tok := cf.accessKey, cf.secretKey, cf.sessionToken
	switch {
	case ak != "":
	case os.Getenv("NAS_ACCESS_KEY") != "":
		ak, sk, tok = os.Getenv("NAS_ACCESS_KEY"), os.Getenv("NAS_SECRET_KEY"), os.Getenv("NAS_SESSION_TOKEN")
	default:
		ak, sk, tok = os.Getenv("AWS_ACCESS_KEY_ID"), os.Getenv("AWS_SECRET_ACCESS_KEY"), os.Getenv("AWS_SESSION_TOKEN")
	}
	if ak == "" && sk == "" {
		ak, sk = dataDirCredentials()
	}
	if ak == "" || sk == "" {
		return nil, usagef("no credentials: set NAS_ACCESS_KEY and NAS_SECRET_KEY (or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY), or give --access-key and --secret-key")
	}
	ep := strings.TrimSuffix(firstOf(cf.endpoint, os.Getenv("NAS_ENDPOINT"), os.Getenv("AWS_ENDPOINT_URL"), "http://127.0.0.1:9000"), "/")
	return &client{
		endpoint: ep,
		creds:    aws.Credentials{AccessKeyID: ak, SecretAccessKey: sk, SessionToken: tok},
		http:     &http.Client{Timeout: 10 * time.Minute},
		signer:   v4.NewSigner(),
	}, nil
}

// apiError is the control API's error document.
type apiError struct {
	Code      string `json:"code"`
	Message   string `json:"message"`
	Retryable bool   `json:"retryable"`
	RequestID string `json:"request_id"`
}

func (e *apiError) Error() string { return e.Code + ": " + e.Message }

// call POSTs args to /_nas/v1/<op> and decodes the answer into out.
func (c *client) call(ctx context.Context, op string, args, out any) error {
	body, err := json.Marshal(args)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint+"/_nas/v1/"+op, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("bad endpoint %q: %w", c.endpoint, err)
	}
	req.Header.Set("Content-Type", "application/json")
	sum := sha256.Sum256(body)
	hash := hex.EncodeToString(sum[:])
	req.Header.Set("x-amz-content-sha256", hash)
	if err := c.signer.SignHTTP(ctx, c.creds, req, hash, "s3", "us-east-1", time.Now()); err != nil {
		return err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("reach gateway at %s: %w", c.endpoint, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		var doc struct {
			Error *apiError `json:"error"`
		}
		if json.Unmarshal(data, &doc) == nil && doc.Error != nil {
			return doc.Error
		}
		return fmt.Errorf("gateway answered %s", resp.Status)
	}
	if out == nil {
		return nil
	}
	if raw, ok := out.(*json.RawMessage); ok {
		*raw = append((*raw)[:0], data...)
		return nil
	}
	return json.Unmarshal(data, out)
}

// printJSON prints v indented.
func printJSON(v any) error {
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// isNotFound reports an API not-found error.
func isNotFound(err error) bool {
	var e *apiError
	return errors.As(err, &e) && e.Code == "NotFound"
}
