package bot

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"
)

// verified reads the body (bounded) and checks Slack's signature before anything else: a request that fails gets
// 401 and changes nothing, and so does one received before (notReplayed).
func (s *Server) verified(next func(w http.ResponseWriter, r *http.Request, body []byte)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBody))
		if err != nil {
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
				return
			}
			http.Error(w, "reading request", http.StatusBadRequest)
			return
		}
		if err := verify(r.Header, body, s.cfg.SigningSecret, s.cfg.Now()); err != nil {
			s.log.Warn("rejected a Slack request", "path", r.URL.Path, "err", err)
			http.Error(w, "invalid signature", http.StatusUnauthorized)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		s.replays.notReplayed(w, r, body, next)
	}
}

// Errors of verify.
var (
	errNoSignature  = errors.New("missing signature headers")
	errStale        = errors.New("timestamp more than 5 minutes from now")
	errBadSignature = errors.New("signature does not match")
)

// verify checks a request's v0 signature and that its timestamp is within five minutes of now (so a captured request
// cannot be replayed later).
func verify(h http.Header, body []byte, secret string, now time.Time) error {
	sig, ts := h.Get("X-Slack-Signature"), h.Get("X-Slack-Request-Timestamp")
	if sig == "" || ts == "" || secret == "" {
		return errNoSignature
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return errNoSignature
	}
	if d := now.Sub(time.Unix(sec, 0)); d > 5*time.Minute || d < -5*time.Minute {
		return errStale
	}
	mac := hmac.New(sha256.New, []byte(secret))
	fmt.Fprintf(mac, "v0:%s:", ts)
	mac.Write(body)
	want := "v0=" + hex.EncodeToString(mac.Sum(nil))
	if !hmac.Equal([]byte(want), []byte(sig)) {
		return errBadSignature
	}
	return nil
}
