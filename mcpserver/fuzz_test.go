package mcpserver_test

import (
	"encoding/json"
	"testing"
)

var fuzzTools = []string{"guide_cache_file", "guide_list_directory", "guide_read_file", "guide_pending_requests", "guide_cache_stats"}

// FuzzToolArguments sends arbitrary JSON as a tool's arguments. Whatever
// arrives, the reply is a well-formed envelope that matches the tool's output
// schema, and a refused call leaves the store's revision unchanged.
func FuzzToolArguments(f *testing.F) {
	seeds := []struct {
		tool byte
		args string
	}{
		{0, `{"path":"/a.txt","content":"hello"}`},
		{0, `{"filename":"C:\\x\\y.bin","content":"AAEC","encoding":"base64","sha256":"AE4B3280E56E2FAF83F414A6E3DABE9D5FBE18976544C05FED121ACCB85B53FC"}`},
		{0, `{"path":"/m","content":"","mtime":1714564800.25,"mode":"0640"}`},
		{0, `{"path":"/a\ud800b","content":"x"}`},
		{0, "{\"path\":\"/\xff\",\"content\":\"x\"}"},
		{0, `{"path":"../x","content":"x","path":"/y"}`},
		{1, `{"path":"/d","pattern":"*.go","entries":[{"name":"a.go","type":"file","size":3},{"name":"s","type":"directory","entries":[{"name":"b.txt","type":"file"}]}]}`},
		{1, `{"path":"/d","entries":[{"name":"../../x","type":"file"}]}`},
		{2, `{"path":"/c","upload_id":"u","chunk_index":1,"chunk_count":2,"content":"YQ==","encoding":"base64","sha256":"ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb"}`},
		{2, `{"path":"/c","upload_id":"u","chunk_index":1e0,"chunk_count":2.0,"content":"a","sha256":"CA978112CA1BBDCAFAC231B39A23DC4DA786EFF8147C4E72B9807785AFEE48BB","chunk_sha256":"00"}`},
		{2, `[]`},
		{2, `null`},
		{0, `{"path":"/t","content":"x","ttl_seconds":60,"pin":true}`},
		{2, `{"path":"/c","upload_id":"v","chunk_index":0,"chunk_count":1,"content":"a","total_size":1,"sha256":"ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb"}`},
		{3, `{"wait_seconds":60,"cursor":"lq3x9k2m1f-4"}`},
		{3, `{"cursor":""}`},
		{4, `{}`},
	}
	for _, s := range seeds {
		f.Add(s.tool, []byte(s.args))
	}
	h := newHarness(f, nil)
	h.srv.Close() // long polls return at once; every tool still answers
	f.Fuzz(func(t *testing.T, tool byte, args []byte) {
		if !json.Valid(args) {
			t.Skip("the client cannot send invalid JSON")
		}
		h.t = t
		rev := h.revision()
		env := h.call(fuzzTools[int(tool)%len(fuzzTools)], json.RawMessage(args))
		if !env.Success && h.revision() != rev {
			t.Fatalf("a refused call (%s) changed the store", env.Error.Message)
		}
	})
}
