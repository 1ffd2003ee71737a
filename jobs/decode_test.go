package jobs

import (
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"
)

// DecodeRun reads what encoding/json wrote as encoding/json reads it: real runs saved by an earlier orch, and a run
// with every field of every type in it set, down to the escalations, attempts and pipeline state.
func TestDecodeRunAsEncodingJSON(t *testing.T) {
	var docs [][]byte
	var saved struct {
		Keys []struct {
			Key    string `json:"key"`
			String string `json:"string"`
		} `json:"keys"`
	}
	data, err := os.ReadFile("store/testdata/redis-before-archive.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &saved); err != nil {
		t.Fatal(err)
	}
	for _, k := range saved.Keys {
		if strings.HasPrefix(k.Key, "orch:run:{") && strings.HasSuffix(k.Key, "}") {
			docs = append(docs, []byte(k.String))
		}
	}
	if len(docs) < 6 {
		t.Fatalf("%d saved runs", len(docs))
	}
	var full Run
	fill(reflect.ValueOf(&full).Elem(), 0)
	whole, err := json.Marshal(&full)
	if err != nil {
		t.Fatal(err)
	}
	if len(whole) < 5000 {
		t.Fatalf("the filled run is only %d bytes: %s", len(whole), whole)
	}
	// Text as agents write it: quotes, escapes, non-ASCII, HTML, control characters, invalid UTF-8.
	full.Tasks[0].Title = "say \"done\" \\ <b>&</b> ünïcode 😀 \x01\x7f tab\t \xff\xfe end"
	odd, err := json.Marshal(&full)
	if err != nil {
		t.Fatal(err)
	}
	docs = append(docs, whole, odd)

	for i, doc := range docs {
		var want, got Run
		if err := json.Unmarshal(doc, &want); err != nil {
			t.Fatalf("doc %d: encoding/json: %v", i, err)
		}
		if err := DecodeRun(doc, &got); err != nil {
			t.Fatalf("doc %d: DecodeRun: %v", i, err)
		}
		if !reflect.DeepEqual(got, want) {
			a, _ := json.Marshal(&want)
			b, _ := json.Marshal(&got)
			t.Fatalf("doc %d reads differently:\nencoding/json %s\nDecodeRun     %s", i, a, b)
		}
	}
	for _, bad := range []string{"", "{", `{"id": 1}`, `{"tasks": [{"id": "1.1"}`, "null x", "\x1f\x8b\x08"} {
		var want, got Run
		if (json.Unmarshal([]byte(bad), &want) == nil) != (DecodeRun([]byte(bad), &got) == nil) {
			t.Fatalf("%q: encoding/json and DecodeRun disagree on whether it is a run", bad)
		}
	}
}

// fill sets every field it can reach to a value that is not its zero: strings, numbers, booleans, times, one element
// in each slice and map, a value behind each pointer. Interfaces stay nil. depth bounds recursive types.
func fill(v reflect.Value, depth int) {
	if depth > 12 || !v.CanSet() {
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString("v" + v.Type().Name())
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if v.Type() == reflect.TypeFor[time.Duration]() {
			v.SetInt(int64(1500 * time.Millisecond))
		} else {
			v.SetInt(7)
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(7)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(0.125)
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			v.Set(reflect.ValueOf(time.Date(2026, 11, 29, 16, 30, 0, 123456789, time.UTC)))
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i), depth+1)
			}
		}
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fill(p.Elem(), depth+1)
		v.Set(p)
	case reflect.Slice:
		if v.Type() == reflect.TypeFor[json.RawMessage]() {
			v.SetBytes([]byte(`{"raw":["json",1]}`))
			return
		}
		if v.Type().Elem().Kind() == reflect.Uint8 {
			v.SetBytes([]byte("bytes"))
			return
		}
		s := reflect.MakeSlice(v.Type(), 1, 1)
		fill(s.Index(0), depth+1)
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k := reflect.New(v.Type().Key()).Elem()
		fill(k, depth+1)
		e := reflect.New(v.Type().Elem()).Elem()
		fill(e, depth+1)
		m.SetMapIndex(k, e)
		v.Set(m)
	}
}
