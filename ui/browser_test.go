package ui_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/agentnas/nas/apiv1"
	"github.com/agentnas/nas/nastest"
)

// The browser tests drive a real Chromium (headless) through the control
// room of a real gateway on loopback, at a desk's size and a phone's, and
// save what the pages look like under testdata/screenshots. They skip
// when Chromium is absent, unless NAS_REQUIRE_CHROMIUM=1.

// screen is a viewport the journey runs at.
type screen struct {
	name          string
	width, height int64
	mobile        bool
}

var screens = []screen{{name: "desktop", width: 1280, height: 800}, {name: "phone", width: 375, height: 812, mobile: true}}

// chromium finds the browser or skips.
func chromium(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("NAS_REQUIRE_CHROMIUM") == "1" {
		t.Fatal("NAS_REQUIRE_CHROMIUM=1 and no Chromium on PATH (apt-get install chromium)")
	}
	t.Skip("no Chromium on PATH; the browser tests need it (NAS_REQUIRE_CHROMIUM=1 makes this a failure)")
	return ""
}

// browser starts a headless Chromium at sc's size.
func browser(t *testing.T, exe string, sc screen) context.Context {
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.WindowSize(int(sc.width), int(sc.height)), chromedp.Flag("headless", "new"))
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelB := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelB(); cancelA() })
	em := chromedp.EmulateViewport(sc.width, sc.height)
	if sc.mobile {
		em = chromedp.EmulateViewport(sc.width, sc.height, chromedp.EmulateMobile, chromedp.EmulateScale(2))
	}
	if err := chromedp.Do(ctx, em); err != nil {
		t.Fatalf("start Chromium: %v", err)
	}
	return ctx
}

// shot saves a full-page PNG under testdata/screenshots.
func shot(name string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		b, err := chromedp.FullScreenshot(100)(ctx, t)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join("testdata", "screenshots", name+".png"), b, 0o644)
	})
}

// banner waits until the banner says want.
func banner(want string) chromedp.Action[chromedp.Void] {
	return until(fmt.Sprintf(`(document.getElementById('banner').textContent || '').includes(%q)`, want))
}

// until waits until the expression is true.
func until(expr string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(15*time.Second))(ctx, t)
		return err
	})
}

// goTo moves the page to a view (a same-document navigation).
func goTo(hash string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := chromedp.Evaluate[string](fmt.Sprintf(`location.hash = %q`, hash))(ctx, t)
		return err
	})
}

// openGate goes to a gate's card and waits for it.
func openGate(id string) chromedp.Action[chromedp.Void] {
	return chromedp.Steps(goTo("#/gate/"+id), chromedp.WaitVisible(chromedp.CSS(fmt.Sprintf(`#card[data-gate=%q]`, id))))
}

// TestBrowserJourney signs in, approves a gate, sees a void approval,
// approves narrowed, denies, and revokes a lease, at both sizes.
func TestBrowserJourney(t *testing.T) {
	exe := chromium(t)
	if err := os.MkdirAll(filepath.Join("testdata", "screenshots"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, sc := range screens {
		t.Run(sc.name, func(t *testing.T) { journey(t, exe, sc) })
	}
}

// gates are one journey's repositories, each with one pending gate.
type gates struct {
	approve, void, narrow, deny apiv1.Proposal
	revoke                      *run
}

func seedGates(r *room) gates {
	var g gates
	for _, repo := range []string{"approve", "void", "narrow", "deny"} {
		r.seedRepo(repo)
	}
	g.approve = r.propose("approve", r.newRun("approve", "run-approve"), "Rewrite step two of the guide")
	voidRun := r.newRun("void", "run-void")
	g.void = r.propose("void", voidRun, "Edit the guide, then keep writing")
	// The branch moves after the card was made: approving it is void.
	r.put(r.s3(voidRun.creds), "void", "docs/late.md", "written after the card\n")
	r.do(voidRun.c, apiv1.CommitCreateRequest{Repo: "void", Branch: voidRun.lease.Branch, Message: "after the card"}, nil)
	g.narrow = r.propose("narrow", r.newRun("narrow", "run-narrow"), "Several doc changes; take only some")
	// The deny repository's main requires a check, which fails: the card
	// shows its word.
	ci := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"state":"fail","message":"unit tests: 3 of 120 failed"}`)
	}))
	r.t.Cleanup(ci.Close)
	r.do(r.owner, apiv1.CheckAddRequest{Repo: "deny", Name: "ci", URL: ci.URL}, nil)
	r.do(r.owner, apiv1.CheckRequireRequest{Repo: "deny", Branch: "main", Checks: []string{"ci"}}, nil)
	g.deny = r.propose("deny", r.newRun("deny", "run-deny"), "Delete the old page")
	r.waitCheck(g.deny.ID, "fail")
	g.revoke = r.newRun("approve", "run-to-revoke")
	return g
}

func journey(t *testing.T, exe string, sc screen) {
	r := newRoom(t)
	g := seedGates(r)
	ctx := browser(t, exe, sc)
	base := r.srv.Endpoint
	svc := r.srv.Gateway.Branches
	steps := []struct {
		name string
		do   chromedp.Action[chromedp.Void]
	}{
		{"sign in", chromedp.Steps(
			chromedp.Navigate(base+"/_nas/ui/"),
			chromedp.WaitVisible(chromedp.ID("signin-form")),
			chromedp.SendKeys(chromedp.ID("access_key"), nastest.AccessKey),
			chromedp.SendKeys(chromedp.ID("secret_key"), nastest.SecretKey),
			chromedp.Click(chromedp.ID("signin-submit")),
			chromedp.WaitVisible(chromedp.ID("inbox")),
			shot(sc.name+"-inbox"),
		)},
		{"approve", chromedp.Steps(
			openGate(g.approve.GateID),
			chromedp.Click(chromedp.CSS(`#changes li.kind-M button.link`)),
			chromedp.WaitVisible(chromedp.CSS(`pre.unified`)),
			shot(sc.name+"-gate-card"),
			chromedp.Click(chromedp.ID("approve")),
			banner("Gate approved"),
		)},
		{"void approval", chromedp.Steps(
			openGate(g.void.GateID),
			chromedp.Click(chromedp.ID("approve")),
			banner("Approval void"),
			shot(sc.name+"-approval-void"),
		)},
		{"approve narrowed", chromedp.Steps(
			openGate(g.narrow.GateID),
			chromedp.Click(chromedp.CSS(`#changes input.pick[value="docs/guide.md"]`)),
			chromedp.Click(chromedp.ID("approve-narrowed")),
			banner("Gate approved"),
		)},
		{"a failing check, then deny", chromedp.Steps(
			openGate(g.deny.GateID),
			chromedp.WaitVisible(chromedp.CSS(`#checks li[data-check="ci"].state-fail`)),
			chromedp.WaitVisible(chromedp.ID("reason")),
			shot(sc.name+"-gate-card-checks"),
			chromedp.Click(chromedp.ID("approve")),
			banner("ChecksFailed"),
			chromedp.SendKeys(chromedp.ID("reason"), "not now"),
			chromedp.Click(chromedp.ID("deny")),
			banner("Gate denied"),
		)},
		{"revoke a lease", chromedp.Steps(
			goTo("#/leases"),
			chromedp.WaitVisible(chromedp.ID("leases")),
			// What each live lease has left arrives after the list; click once it has.
			until(`[...document.querySelectorAll('#leases li.live .remaining')].every((e) => e.dataset.loaded === '1')`),
			chromedp.Click(chromedp.CSS(fmt.Sprintf(`li[data-lease=%q] button.revoke`, g.revoke.lease.ID))),
			chromedp.Click(chromedp.CSS(fmt.Sprintf(`li[data-lease=%q] button.revoke`, g.revoke.lease.ID))),
			banner("Revoked"),
			shot(sc.name+"-leases"),
		)},
		{"branches", chromedp.Steps(
			goTo("#/branches"),
			chromedp.WaitVisible(chromedp.CSS(`#branches button.link`)),
			chromedp.Click(chromedp.CSS(`#branches button.link`)),
			chromedp.WaitVisible(chromedp.CSS(`#branches .changes-since li`)),
		)},
		{"records", chromedp.Steps(
			goTo("#/run/run-approve"),
			chromedp.WaitVisible(chromedp.CSS("#records li.event")),
			until(`document.getElementById('verify').textContent.includes('Chain verified')`),
			shot(sc.name+"-run-timeline"),
		)},
	}
	for _, st := range steps {
		sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err := chromedp.Do(sctx, st.do)
		cancel()
		if err != nil {
			text, _ := chromedp.Run(ctx, chromedp.TextContent(chromedp.CSS("body")))
			t.Fatalf("%s: %s: %v\npage: %s", sc.name, st.name, err, text)
		}
	}
	bg := context.Background()
	if e, err := svc.Get(bg, "approve", "main", "docs/new.md"); err != nil || e == nil {
		t.Errorf("the approved gate did not merge: %v", err)
	}
	if _, err := svc.Get(bg, "void", "main", "docs/new.md"); err == nil {
		t.Error("the void approval merged")
	}
	if _, err := svc.Get(bg, "narrow", "main", "docs/new.md"); err == nil {
		t.Error("the narrowed approval merged a path that was not chosen")
	}
	if e, err := svc.Get(bg, "narrow", "main", "docs/guide.md"); err != nil || e.Size == int64(len("# Guide\n\nStep one.\nStep two.\nStep three.\n")) {
		t.Errorf("the narrowed approval did not merge the chosen path: %v %v", e, err)
	}
	if _, err := svc.Get(bg, "deny", "main", "docs/old.md"); err != nil {
		t.Errorf("the denied gate changed main: %v", err)
	}
	var lg apiv1.LeaseGetResponse
	r.do(r.owner, apiv1.LeaseGetRequest{LeaseID: g.revoke.lease.ID}, &lg)
	if !lg.Lease.Revoked {
		t.Error("the lease was not revoked")
	}
}

// waitCheck waits until every check of proposal id has come to state.
func (r *room) waitCheck(id, state string) {
	r.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var out apiv1.CheckResultsResponse
		r.do(r.owner, apiv1.CheckResultsRequest{ProposalID: id}, &out)
		done := len(out.Results) > 0
		for _, c := range out.Results {
			done = done && c.State == state
		}
		if done {
			return
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("checks of %s did not come to %s: %+v", id, state, out.Results)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
