package tool

import "testing"

func TestNearestTool(t *testing.T) {
	tools := []string{"guide_cache_file", "guide_cache_files", "guide_pending_requests", "read_file", "write"}
	for name, want := range map[string]string{
		"cache_file":             "guide_cache_file",
		"guide_cache_fille":      "guide_cache_file",
		"GUIDE-CACHE-FILES":      "guide_cache_files",
		"pending_requests":       "guide_pending_requests",
		"readfile":               "read_file",
		"frobnicate":             "",
		"write_file_to_the_disk": "",
	} {
		if got := nearestTool(name, tools); got != want {
			t.Errorf("nearestTool(%q) = %q, want %q", name, got, want)
		}
	}
}
