package mcpserver_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/depotfs/depotfs/mcpserver"
)

func TestParseProfiles(t *testing.T) {
	for _, tt := range []struct {
		in      string
		want    []mcpserver.Profile
		wantErr string
	}{
		{"guide,provider", []mcpserver.Profile{"guide", "provider"}, ""},
		{"fs", []mcpserver.Profile{"guide", "fs"}, ""},
		{" provider , fs ,provider", []mcpserver.Profile{"guide", "provider", "fs"}, ""},
		{"guide", []mcpserver.Profile{"guide"}, ""},
		{"", nil, "no tool profile"},
		{" , ", nil, "no tool profile"},
		{"guide,ftp", nil, `unknown tool profile "ftp"`},
	} {
		got, err := mcpserver.ParseProfiles(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), "guide, provider, fs") {
				t.Errorf("ParseProfiles(%q) error %v, want one containing %q and the valid names", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("ParseProfiles(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}
