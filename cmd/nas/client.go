package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/spf13/cobra"

	nasclient "github.com/agentnas/nas/client"
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

// client calls the control API.
type client struct {
	endpoint string
	creds    aws.Credentials
	c        *nasclient.Client
}

// newClient resolves the credentials and endpoint as the contract says
// (flags, NAS_*, AWS_*, --lease-json, the data directory of a local
// `nas serve`).
func newClient() (*client, error) {
	cfg, _, err := resolveClient()
	if err != nil {
		return nil, err
	}
	cfg.HTTP = &http.Client{Timeout: 10 * time.Minute}
	return &client{endpoint: cfg.Endpoint, creds: cfg.Credentials, c: nasclient.New(cfg)}, nil
}

// resolveClient applies the global client flags.
func resolveClient() (nasclient.Config, *nasclient.LeaseFile, error) {
	cfg, lf, err := nasclient.Resolve(nasclient.Source{Endpoint: cf.endpoint, AccessKey: cf.accessKey, SecretKey: cf.secretKey,
		SessionToken: cf.sessionToken, LeaseJSON: cf.leaseJSON})
	if errors.Is(err, nasclient.ErrNoCredentials) {
		return cfg, nil, usageError{err}
	}
	return cfg, lf, err
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
	err := c.c.Call(ctx, op, args, out)
	var ce *nasclient.Error
	if errors.As(err, &ce) {
		if ce.Status == 0 {
			return fmt.Errorf("reach gateway at %s: %s", c.endpoint, ce.Message)
		}
		return &apiError{Code: ce.Code, Message: ce.Message, Retryable: ce.Retryable, RequestID: ce.RequestID}
	}
	return err
}

// printJSON prints v indented.
func printJSON(v any) error {
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
