package api

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/agentnas/nas/apiv1"
	"github.com/agentnas/nas/keyring"
	"github.com/agentnas/nas/manifest"
)

// Crypto-shredding. A sensitive file's bytes are sealed under a key of
// its domain (package keyring); destroying the domain's keys makes every
// copy of them unreadable at once: in every commit and checkpoint, in
// dumps, exports and backups of the chunk store, and in chunks the
// metadata store keeps until its compaction. A forget destroys the
// domains it names, and the domains of the sensitive files its paths
// forget when no file it keeps at a head uses them. A domain is its
// repository's (keyring.Scoped): a forget never destroys another
// repository's keys, not even those sealing a copy it forgets.

// sealedAt counts, by domain, the sensitive files a forget plan meets at
// the heads: forgotten ones and kept ones (with the kept keys, for holds).
type sealedAt struct {
	forgotten map[string]int
	kept      map[string][]string
}

// noteSealed adds o's domain to the plan, if o is sealed.
func (h *Handler) noteSealed(ctx context.Context, plan *forgetPlan, key string, e *manifest.Entry, forgotten bool) error {
	if e.Retention != manifest.RetentionSensitive {
		return nil
	}
	c, err := h.b.Manifest().Content(ctx, e)
	if err != nil || c.Seal == nil {
		return err
	}
	if plan.sealed.forgotten == nil {
		plan.sealed = sealedAt{forgotten: map[string]int{}, kept: map[string][]string{}}
	}
	if forgotten {
		plan.sealed.forgotten[c.Seal.Domain]++
	} else {
		plan.sealed.kept[c.Seal.Domain] = append(plan.sealed.kept[c.Seal.Domain], key)
	}
	return nil
}

// domainsToDestroy is what the request destroys: the domains it names,
// and those of forgotten files that nothing kept uses (the others are
// listed in the report as kept).
func domainsToDestroy(a *apiv1.ForgetRequest, plan *forgetPlan, rep *apiv1.ForgetReport) []string {
	var out []string
	for _, d := range a.Domains {
		out = append(out, keyring.Scoped(a.Repo, d))
	}
	var auto []string
	for d := range plan.sealed.forgotten {
		auto = append(auto, d)
	}
	sort.Strings(auto)
	for _, d := range auto {
		switch {
		case slices.Contains(out, d):
		case !strings.HasPrefix(d, a.Repo+"/"):
			rep.Report.KeysKept = append(rep.Report.KeysKept, fmt.Sprintf("%s: kept, it is not a key domain of this repository (forget it in its own)", d))
		case len(plan.sealed.kept[d]) > 0:
			rep.Report.KeysKept = append(rep.Report.KeysKept, fmt.Sprintf("%s: kept, it still seals %d files this forget keeps (name it in domains to destroy it with them)",
				keyring.Unscoped(d), len(plan.sealed.kept[d])))
		default:
			out = append(out, d)
		}
	}
	return out
}

// checkDomains refuses a bad domain name, or a domain that seals a held
// key at a head.
func (h *Handler) checkDomains(ctx context.Context, c *call, a *apiv1.ForgetRequest, plan *forgetPlan) error {
	hs, err := h.holds(ctx, a.Repo)
	if err != nil {
		return err
	}
	for _, d := range a.Domains {
		if err := keyring.ValidDomain(d); err != nil {
			return invalid(err.Error())
		}
		if err := h.refuseHeld(ctx, c, a.Repo, hs, plan.sealed.kept[keyring.Scoped(a.Repo, d)], "sealed under domain "+d); err != nil {
			return err
		}
	}
	return nil
}

// destroyKeys destroys the domains' keys and reports them.
func (h *Handler) destroyKeys(domains []string, rep *apiv1.ForgetReport) error {
	if len(domains) == 0 {
		return nil
	}
	keys := h.b.Keys()
	if keys == nil {
		return fmt.Errorf("forget: this gateway keeps no keyring")
	}
	for _, d := range domains {
		gone, err := keys.Destroy(d)
		if err != nil {
			return fmt.Errorf("forget: destroy the keys of %s: %w", d, err)
		}
		rep.Report.KeysDestroyed = append(rep.Report.KeysDestroyed, gone...)
	}
	rep.RetentionClass = "sensitive"
	return nil
}
