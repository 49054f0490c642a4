// Package verify authenticates webhook deliveries, one type per signature
// scheme, and signs requests the same way.
//
// Every scheme type implements both [Verifier] and [Signer]:
//
//	v, err := verify.NewStripe(secret)            // ErrConfig on a bad secret
//	...
//	if err := v.Verify(r, body); err != nil {     // body is the complete, already-read request body
//		// 401: errors.Is(err, verify.ErrMismatch), ErrStale, ErrMissing, ErrMalformed
//	}
//
// The schemes:
//
//   - [Standard]: Standard Webhooks (webhook-id, webhook-timestamp,
//     webhook-signature; whsec_ secrets), also used to sign hookgate's own
//     deliveries.
//   - [Stripe]: Stripe-Signature t=,v1= with several v1 during secret rotation.
//   - [GitHub]: X-Hub-Signature-256.
//   - [Shopify]: X-Shopify-Hmac-Sha256.
//   - [HubSpot]: X-HubSpot-Signature-v3, and the legacy v1 and v2 signatures.
//   - [Shippo]: Shippo-Auth-Signature and/or a ?token= URL parameter.
//   - [Salesforce]: the outbound message's OrganizationId and an optional
//     ?token= URL parameter (Salesforce does not sign outbound messages).
//   - [HMAC]: any single-header HMAC of the body (header, algorithm,
//     encoding and prefix configurable).
//
// A verifier fails closed: every failure is an [*Error] that wraps exactly
// one of [ErrConfig], [ErrMissing], [ErrMalformed], [ErrStale] or
// [ErrMismatch], names the check that failed, and never contains the secret
// or the expected signature. Timestamped schemes reject timestamps that are
// too far in the past or in the future ([WithTolerance]); their clock is
// injectable ([WithClock]). Every comparison of a secret-derived value is
// constant-time.
//
// Verifiers and signers hold no mutable state after construction and are
// safe for concurrent use. Options that a scheme has no use for (a
// tolerance for GitHub, a public URL for Stripe) are accepted and ignored,
// so that callers can pass one option set to every constructor.
package verify
