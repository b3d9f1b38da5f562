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

	"github.com/agentnas/nas/apiv1"
	nasclient "github.com/agentnas/nas/client"
)

// clientFlags are the credentials and endpoint of every client command.
type clientFlags struct {
	endpoint, accessKey, secretKey, sessionToken string
	leaseJSON                                    string
	alias, profile                               string
	json                                         bool
}

var cf clientFlags

// addClientFlags declares the client flags on root, for every command.
func addClientFlags(root *cobra.Command) {
	f := root.PersistentFlags()
	f.StringVar(&cf.endpoint, "endpoint", "", "gateway URL (default $NAS_ENDPOINT, $AWS_ENDPOINT_URL, http://127.0.0.1:9000)")
	f.StringVar(&cf.accessKey, "access-key", "", "access key (default $NAS_ACCESS_KEY, $AWS_ACCESS_KEY_ID)")
	f.StringVar(&cf.secretKey, "secret-key", "", "secret key (default $NAS_SECRET_KEY, $AWS_SECRET_ACCESS_KEY)")
	f.StringVar(&cf.sessionToken, "session-token", "", "session token (default $NAS_SESSION_TOKEN, $AWS_SESSION_TOKEN)")
	f.StringVar(&cf.leaseJSON, "lease-json", "", "use the credentials and endpoint of this lease file (the output of 'nas lease create --json')")
	f.StringVar(&cf.alias, "alias", "", "use the endpoint and credentials of this alias (see 'nas alias'; default $NAS_ALIAS)")
	f.StringVar(&cf.profile, "profile", "", "use this profile of the AWS shared config and credentials files (AWS_PROFILE is read only after the gateway's own sources)")
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
	return wrapClient(nasclient.New(cfg)), nil
}

// wrapClient is the CLI's view of a client built elsewhere.
func wrapClient(c *nasclient.Client) *client {
	return &client{endpoint: c.Endpoint(), creds: c.Credentials(), c: c}
}

// resolveClient applies the global client flags.
func resolveClient() (nasclient.Config, *nasclient.LeaseFile, error) {
	cfg, lf, err := nasclient.Resolve(nasclient.Source{Endpoint: cf.endpoint, AccessKey: cf.accessKey, SecretKey: cf.secretKey,
		SessionToken: cf.sessionToken, LeaseJSON: cf.leaseJSON, Alias: cf.alias, Profile: cf.profile})
	if errors.Is(err, nasclient.ErrNoCredentials) || errors.Is(err, nasclient.ErrTwoSources) {
		return cfg, nil, usageError{err}
	}
	return cfg, lf, err
}

// do sends req to its control-API operation and decodes the answer into
// resp; a failed call becomes an *apiError.
func (c *client) do(ctx context.Context, req apiv1.Request, resp any) error {
	return c.callError(c.c.Do(ctx, req, resp))
}

// callError translates a failure of the client into the CLI's *apiError;
// other errors pass unchanged.
func (c *client) callError(err error) error {
	var ce *nasclient.Error
	if !errors.As(err, &ce) {
		return err
	}
	return newAPIError(ce, c.endpoint)
}

// newAPIError is the *apiError of a failed call to the gateway at
// endpoint.
func newAPIError(ce *nasclient.Error, endpoint string) *apiError {
	e := &apiError{doc: apiv1.Error{Code: ce.Code, Message: ce.Message, Retryable: ce.Retryable,
		RequestID: ce.RequestID, Details: ce.Details}, err: ce}
	if ce.Status == 0 {
		e.text = fmt.Sprintf("reach gateway at %s: %s", endpoint, ce.Message)
	}
	return e
}

// apiError is a failed control-API call: the gateway's error document, or
// for a gateway that was not reached one with the code Unreachable.
type apiError struct {
	doc  apiv1.Error
	text string // what the CLI prints; "" means "CODE: message"
	err  error  // the client's *nasclient.Error
}

// Error is what the CLI prints for the failed call.
func (e *apiError) Error() string {
	if e.text != "" {
		return e.text
	}
	return e.doc.Code + ": " + e.doc.Message
}

// Unwrap returns the client's error.
func (e *apiError) Unwrap() error { return e.err }

// errorCode returns the control-API error code of err ("" when err is not
// a failed call).
func errorCode(err error) string {
	var e *apiError
	if errors.As(err, &e) {
		return e.doc.Code
	}
	return ""
}

// CLI error codes, for failures that are not a control-API call's: the
// command line was wrong (exit 2), or the command failed on its own
// (exit 1).
const (
	codeUsage  = "UsageError"
	codeFailed = "CommandFailed"
)

// printErrorDocument prints, as --json asks, the failure as the uniform
// JSON error document on standard error: a control-API call's own
// document, or one with codeUsage or codeFailed and the error's text.
func printErrorDocument(err error, usage bool) {
	var e *apiError
	var ce *nasclient.Error
	var doc apiv1.Error
	switch {
	case errors.As(err, &e):
		doc = e.doc
	case errors.As(err, &ce):
		doc = newAPIError(ce, "").doc
	case usage:
		doc = apiv1.Error{Code: codeUsage, Message: err.Error()}
	default:
		doc = apiv1.Error{Code: codeFailed, Message: err.Error()}
	}
	enc := json.NewEncoder(os.Stderr)
	enc.SetIndent("", "  ")
	_ = enc.Encode(apiv1.ErrorDocument{Error: &doc})
}

// doCall sends req with a new client and decodes the answer into resp.
func doCall(ctx context.Context, req apiv1.Request, resp any) error {
	c, err := newClient()
	if err != nil {
		return err
	}
	return c.do(ctx, req, resp)
}

// simpleCall runs one call and prints msg, or with --json the answer.
func simpleCall(ctx context.Context, req apiv1.Request, resp any, msg string) error {
	if err := doCall(ctx, req, resp); err != nil {
		return err
	}
	if cf.json {
		return printJSON(resp)
	}
	fmt.Println(msg)
	return nil
}

// jsonCall runs one call and prints its answer as JSON, with or without
// --json.
func jsonCall(ctx context.Context, req apiv1.Request, resp any) error {
	if err := doCall(ctx, req, resp); err != nil {
		return err
	}
	return printJSON(resp)
}

// printJSON prints v indented.
func printJSON(v any) error {
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
