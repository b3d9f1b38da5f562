// Package ui is the control room: the web page the gateway serves at
// /_nas/ui/ for the owner to decide gates, read Gate Cards and their
// diffs, revoke leases, look at branches and read the flight recorder.
//
// Vocabulary: the page (index.html, app.js, app.css and icon.svg,
// embedded in the binary and served from this package, so nothing is
// loaded from another origin), the session (the owner's sign-in, a cookie that
// carries only a random token; package auth keeps it) and the CSRF token
// (the session's, which the page sends back on every call).
//
// The page is plain HTML with a little vanilla JavaScript and CSS and no
// framework: it is small, has no build step and no dependency that could
// be pulled from elsewhere, and under a Content-Security-Policy of
// default-src 'self' with no inline script it has nothing to inject into.
// Every datum reaches the DOM through textContent, never innerHTML.
//
// The page is one more client of the control API: its script calls POST
// /_nas/v1/NOUN/VERB with the cookie and the CSRF token, and the API's own
// door (auth.Authority.Authenticate) authenticates it; this package checks
// no credential itself. It serves only the page's assets (by exact name:
// no path is joined or cleaned) and three session endpoints:
//
//	POST /_nas/ui/signin    form access_key, secret_key -> cookie, {csrf, expires_at}
//	GET  /_nas/ui/session   the live session's {csrf, expires_at}, else 401
//	POST /_nas/ui/signout   ends the session (CSRF token required)
//
// Every answer carries a strict Content-Security-Policy, X-Frame-Options
// DENY, X-Content-Type-Options nosniff and Referrer-Policy no-referrer.
// The handler is stateless and safe for concurrent use.
package ui
