// Package webhook delivers jobs as signed HTTP webhooks (API.md §6): one
// router.Transport. It renders the request (the structured CloudEvent, the
// data alone with ce-* headers, or a TASK job's payload), signs it with
// Standard Webhooks headers (HMAC-SHA256 with every unexpired secret of the
// subscription), sends it through a dialer that refuses every address that
// is not globally reachable (checked on the resolved address at connect
// time, see AddrClass) without following redirects, and classifies the
// answer into a dispatch.Outcome: success, retryable (with a Retry-After)
// or permanent.
package webhook
