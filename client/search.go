package client

import (
	"context"

	"github.com/agentnas/nas/apiv1"
)

// Search is a full-text search (search/query): snippets of the files
// that matched, best first, each with an evidence pointer.
func (c *Client) Search(ctx context.Context, req apiv1.SearchQueryRequest) (*apiv1.SearchQueryResponse, error) {
	var out apiv1.SearchQueryResponse
	if err := c.Do(ctx, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Index runs an index verb (owner only): apiv1.IndexRebuildRequest or
// apiv1.IndexStatusRequest, which answer the indexes; for
// apiv1.IndexDeleteRequest the answer lists none.
func (c *Client) Index(ctx context.Context, req apiv1.Request) (*apiv1.IndexResponse, error) {
	out := &apiv1.IndexResponse{Indexes: []apiv1.IndexInfo{}}
	if _, ok := req.(apiv1.IndexDeleteRequest); ok {
		return out, c.Do(ctx, req, &apiv1.DeletedResponse{})
	}
	if err := c.Do(ctx, req, out); err != nil {
		return nil, err
	}
	return out, nil
}
