package brain

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// jsonextract.go finds the JSON value in a model's reply. Models asked for "ONLY the JSON" still wrap it in
// ```json fences, open with "Here is the result:", or add a remark after it; and prose can hold braces of its
// own ("the {status} field"), so the first '{' is not necessarily the answer.

// maxJSONCandidates bounds the work on a hostile or degenerate reply ("{{{{…"): each candidate is a decode
// from that offset.
const maxJSONCandidates = 1000

// errNoJSON and errPartialJSON are the two ways a reply can lack its JSON; the corrective prompt says which.
var (
	errNoJSON      = errors.New("no JSON value in the reply")
	errPartialJSON = errors.New("the JSON in the reply is incomplete or malformed")
)

// extractJSON returns the first complete, valid JSON value of the wanted kind ('{' for an object, '[' for an
// array) in reply. Text before and after it is ignored. The error is errPartialJSON when a value of that
// kind starts but never parses (cut off, or broken), else errNoJSON.
func extractJSON(reply string, kind byte) (json.RawMessage, error) {
	partial := ""
	from := 0
	for n := 0; n < maxJSONCandidates; n++ {
		i := strings.IndexByte(reply[from:], kind)
		if i < 0 {
			break
		}
		start := from + i
		dec := json.NewDecoder(strings.NewReader(reply[start:]))
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if err == nil {
			return raw, nil
		}
		// An opening that runs to the end of the reply without closing is the answer cut short; remember
		// the first such, or the first syntax error, to say what was wrong.
		if partial == "" {
			partial = describeJSONError(reply[start:], err)
		}
		from = start + 1
	}
	if partial != "" {
		return nil, fmt.Errorf("%w (%s)", errPartialJSON, partial)
	}
	return nil, errNoJSON
}

// describeJSONError says briefly where and why a decode failed, for the corrective prompt.
func describeJSONError(s string, err error) string {
	var syn *json.SyntaxError
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return "it ends before the value is closed"
	case errors.As(err, &syn):
		return fmt.Sprintf("%v at offset %d", syn, syn.Offset)
	}
	return err.Error()
}
