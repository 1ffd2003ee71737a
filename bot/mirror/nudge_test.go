package mirror

import (
	"testing"
	"time"
)

func TestQuietHours(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Skip("no time zone database")
	}
	q, err := ParseQuietHours("22:00-08:00 Europe/Berlin", time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	for clock, want := range map[string]bool{"21:59": false, "22:00": true, "23:30": true, "00:00": true, "07:59": true,
		"08:00": false, "12:00": false} {
		at, _ := time.ParseInLocation("2006-01-02 15:04", "2026-11-24 "+clock, berlin)
		if got := q.Quiet(at.UTC()); got != want {
			t.Errorf("%s in Berlin: quiet %v, want %v", clock, got, want)
		}
	}
	day, _ := ParseQuietHours("12:00-13:30", time.UTC)
	for clock, want := range map[string]bool{"11:59": false, "12:00": true, "13:29": true, "13:30": false} {
		at, _ := time.Parse("2006-01-02 15:04", "2026-11-24 "+clock)
		if got := day.Quiet(at); got != want {
			t.Errorf("%s: quiet %v, want %v", clock, got, want)
		}
	}
	if off, err := ParseQuietHours("", time.UTC); err != nil || off.Quiet(time.Now()) {
		t.Errorf("no quiet hours: %v, %v", off, err)
	}
	for _, bad := range []string{"22-08", "22:00", "22:00-22:00", "25:00-08:00", "22:00-08:60", "22:00-8:0", "22:00-08:00 Mars/Olympus"} {
		if _, err := ParseQuietHours(bad, time.UTC); err == nil {
			t.Errorf("ParseQuietHours(%q) accepted", bad)
		}
	}
}
