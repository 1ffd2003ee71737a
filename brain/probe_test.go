package brain

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// modelsAPI answers GET /v1/models as the Models API documents it (docs.claude.com/en/api/models-list: a page of
// {"type":"model","id","display_name","created_at"} with has_more, first_id, last_id), or, with a bad key, the API's
// error envelope with 401 authentication_error (docs.claude.com/en/api/errors).
func modelsAPI(t *testing.T, key string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.Method != http.MethodGet || r.URL.Path != "/v1/models" {
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte(`{"type":"error","error":{"type":"not_found_error","message":"Not found"}}`))
			return
		}
		if r.Header.Get("X-Api-Key") != key {
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte(`{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`))
			return
		}
		w.Write([]byte(`{"data":[{"type":"model","id":"claude-haiku-4-5-20251001","display_name":"Claude Haiku 4.5",` +
			`"created_at":"2025-10-01T00:00:00Z"}],"has_more":true,"first_id":"claude-haiku-4-5-20251001","last_id":"claude-haiku-4-5-20251001"}`))
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestProbeTheMessagesAPI(t *testing.T) {
	srv := modelsAPI(t, "sk-good")
	good, _ := NewAnthropic(AnthropicConfig{APIKey: "sk-good", BaseURL: srv.URL})
	if err := good.Probe(context.Background()); err != nil {
		t.Fatalf("a taken key: %v", err)
	}
	bad, _ := NewAnthropic(AnthropicConfig{APIKey: "sk-revoked", BaseURL: srv.URL})
	err := bad.Probe(context.Background())
	if err == nil || !strings.Contains(err.Error(), "401") || !strings.Contains(err.Error(), "authentication_error") {
		t.Fatalf("a revoked key: %v", err)
	}
	if strings.Contains(err.Error(), "sk-revoked") {
		t.Fatalf("the probe's error quotes the key: %v", err)
	}
}
