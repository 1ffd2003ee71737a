package forge

import (
	"bytes"
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"
)

// appauth.go authenticates as a GitHub App and as its installation, as GitHub documents it ("Generating a JSON Web
// Token (JWT) for a GitHub App", "Generating an installation access token for a GitHub App"): a JWT signed with the
// App's private key (RS256; iat a minute in the past for clock drift, exp at most ten minutes ahead, iss the App's
// id) authenticates the App; POST /app/installations/{id}/access_tokens, as the App, mints an installation token
// that expires within the hour, and requests made with it act as the installation.

// jwtLifetime is how far ahead an App's token expires: GitHub refuses more than ten minutes.
const jwtLifetime = 9 * time.Minute

// tokenMargin is how long before its expiry an installation token is replaced: a request that starts with it must
// not arrive after it.
const tokenMargin = 5 * time.Minute

// readAppKey reads the App's private key: the PEM GitHub gives (PKCS#1), or PKCS#8.
func readAppKey(file string) (*rsa.PrivateKey, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, fmt.Errorf("%s holds no PEM block", file)
	}
	if k, err := x509.ParsePKCS1PrivateKey(block.Bytes); err == nil {
		return k, nil
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%s holds no RSA private key: %w", file, err)
	}
	rk, ok := k.(*rsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("%s holds a %T, not the RSA key GitHub gives an App", file, k)
	}
	return rk, nil
}

// appJWT signs the App's token for the moment now.
func appJWT(key *rsa.PrivateKey, id int64, now time.Time) (string, error) {
	enc := base64.RawURLEncoding
	head, _ := json.Marshal(map[string]string{"alg": "RS256", "typ": "JWT"})
	claims, _ := json.Marshal(map[string]any{
		"iat": now.Add(-time.Minute).Unix(),
		"exp": now.Add(jwtLifetime).Unix(),
		"iss": strconv.FormatInt(id, 10),
	})
	signed := enc.EncodeToString(head) + "." + enc.EncodeToString(claims)
	sum := sha256.Sum256([]byte(signed))
	sig, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, sum[:])
	if err != nil {
		return "", err
	}
	return signed + "." + enc.EncodeToString(sig), nil
}

// appTransport sends each request as the App, with a token signed for it.
type appTransport struct {
	base http.RoundTripper
	key  *rsa.PrivateKey
	id   int64
	now  func() time.Time
}

func (t *appTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	tok, err := appJWT(t.key, t.id, t.now())
	if err != nil {
		return nil, fmt.Errorf("signing GitHub App %d's token: %w", t.id, err)
	}
	r := req.Clone(req.Context())
	r.Header.Set("Authorization", "Bearer "+tok)
	return t.base.RoundTrip(r)
}

// installationTransport sends each request as the App's installation, with an installation token it mints as the
// App and replaces before it expires. It is safe for concurrent use: one token serves every request until then.
type installationTransport struct {
	base     http.RoundTripper
	app      *appTransport
	tokenURL string
	now      func() time.Time // the clock a token's expiry is read by

	mu      sync.Mutex
	token   string
	expires time.Time
}

func newInstallationTransport(base http.RoundTripper, app *appTransport, rest string, installation int64) *installationTransport {
	return &installationTransport{base: base, app: app, now: time.Now,
		tokenURL: fmt.Sprintf("%s/app/installations/%d/access_tokens", rest, installation)}
}

func (t *installationTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	tok, err := t.current(req.Context())
	if err != nil {
		return nil, err
	}
	r := req.Clone(req.Context())
	r.Header.Set("Authorization", "token "+tok)
	return t.base.RoundTrip(r)
}

// current is a token good for a while yet, minted anew when the last one is near its expiry.
func (t *installationTransport) current(ctx context.Context) (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.token != "" && t.now().Add(tokenMargin).Before(t.expires) {
		return t.token, nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.tokenURL, http.NoBody)
	if err != nil {
		return "", err
	}
	req.Header.Set("Accept", "application/vnd.github+json")
	req.Header.Set("X-GitHub-Api-Version", "2022-11-28")
	res, err := t.app.RoundTrip(req)
	if err != nil {
		return "", fmt.Errorf("minting an installation token for GitHub App %d: %w", t.app.id, err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if res.StatusCode != http.StatusCreated {
		var e struct {
			Message string `json:"message"`
		}
		_ = json.Unmarshal(body, &e)
		if e.Message == "" {
			e.Message = oneLine(string(bytes.TrimSpace(body)))
		}
		return "", fmt.Errorf("minting an installation token for GitHub App %d: GitHub answered %d %s", t.app.id,
			res.StatusCode, e.Message)
	}
	var got struct {
		Token     string    `json:"token"`
		ExpiresAt time.Time `json:"expires_at"`
	}
	if err := json.Unmarshal(body, &got); err != nil || got.Token == "" {
		return "", errors.New("minting an installation token: GitHub's answer holds no token")
	}
	t.token, t.expires = got.Token, got.ExpiresAt
	return t.token, nil
}
