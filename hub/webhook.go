package hub

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
)

// SignatureHeader is where GitHub puts a delivery's signature: "sha256=" and the hex HMAC-SHA256 of the body, keyed
// with the webhook's secret ("Validating webhook deliveries", docs.github.com).
const SignatureHeader = "X-Hub-Signature-256"

// ErrBadSignature is a delivery whose signature is missing, malformed, or not the body's under the secret.
var ErrBadSignature = errors.New("the delivery's X-Hub-Signature-256 does not match its body")

// Verify checks that signature (the header's value) is body's under secret, in constant time. An empty secret
// verifies nothing: it is an error, never a pass.
func Verify(secret, signature string, body []byte) error {
	if secret == "" {
		return errors.New("no webhook secret is configured (ORCH_GITHUB_WEBHOOK_SECRET): deliveries cannot be verified")
	}
	hexSum, ok := strings.CutPrefix(signature, "sha256=")
	if !ok {
		return ErrBadSignature
	}
	got, err := hex.DecodeString(hexSum)
	if err != nil || len(got) != sha256.Size {
		return ErrBadSignature
	}
	if !hmac.Equal(got, Sign(secret, body)) {
		return ErrBadSignature
	}
	return nil
}

// Sign is body's HMAC-SHA256 under secret, as GitHub computes it.
func Sign(secret string, body []byte) []byte {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return mac.Sum(nil)
}
