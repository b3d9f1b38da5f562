package gitexport

import (
	"context"
	"io"
	"os"

	"github.com/agentnas/nas/apiv1"
	"github.com/agentnas/nas/client"
)

// Client runs export and import against a gateway's control API with the
// owner's credentials: the gateway streams the repository and the client
// writes (or reads) the Git repository on its own disk. The transport,
// signing included, is C's; a failed call is a *client.Error.
type Client struct {
	C *client.Client
}

// Export writes repository repo as a bare Git repository at dest, which
// must not exist or be empty; on failure nothing is left there.
func (c *Client) Export(ctx context.Context, repo, dest string) (*apiv1.Report, error) {
	if err := emptyDir(dest); err != nil {
		return nil, err
	}
	_, statErr := os.Stat(dest)
	existed := statErr == nil
	var rep *apiv1.Report
	written := false
	err := c.C.Export(ctx, repo, func(r io.Reader) error {
		written = true
		var err error
		rep, err = WriteGit(ctx, r, dest)
		return err
	})
	if err != nil {
		if written {
			removeExport(dest, existed)
		}
		return nil, err
	}
	return rep, nil
}

// removeExport removes what a failed export wrote at dest, leaving the
// empty directory there if there was one.
func removeExport(dest string, existed bool) {
	os.RemoveAll(dest)
	if existed {
		os.Mkdir(dest, 0o755)
	}
}

// Import reads the export at src and creates repository repo from it on
// the gateway. The upload is signed chunk by chunk (aws-chunked), so the
// gateway checks every byte it receives came from these credentials. When
// both sides fail, the local error (a tampered export found here) is
// returned: it is the clearer one.
func (c *Client) Import(ctx context.Context, src, repo string) (*apiv1.Report, error) {
	if _, err := os.Stat(src); err != nil {
		return nil, err
	}
	out, err := c.C.Import(ctx, repo, func(w io.Writer) error {
		_, err := ReadGit(ctx, src, w)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &out.Report, nil
}
