package client

import (
	"context"

	"github.com/agentnas/nas/apiv1"
)

// ReadFile is a budgeted read (files/read): the finest view of a file
// that fits the request's token budget, with evidence pointers.
func (c *Client) ReadFile(ctx context.Context, req apiv1.FileReadRequest) (*apiv1.FileReadResponse, error) {
	var out apiv1.FileReadResponse
	if err := c.Do(ctx, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Dereference returns the exact lines an evidence pointer names, as of
// its commit (files/dereference).
func (c *Client) Dereference(ctx context.Context, pointer string) (*apiv1.FileDereferenceResponse, error) {
	var out apiv1.FileDereferenceResponse
	if err := c.Do(ctx, apiv1.FileDereferenceRequest{Pointer: pointer}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// VerifyEvidence checks that a pointer's lines hash to sha256 (hex) at
// its commit (files/verify); a mismatch is a valid answer, not an error.
func (c *Client) VerifyEvidence(ctx context.Context, pointer, sha256 string) (*apiv1.FileVerifyResponse, error) {
	var out apiv1.FileVerifyResponse
	if err := c.Do(ctx, apiv1.FileVerifyRequest{Pointer: pointer, SHA256: sha256}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
