module github.com/depotfs/depotfs

go 1.26.8

require (
	github.com/santhosh-tekuri/jsonschema/v6 v6.0.2
	golang.org/x/crypto v0.52.0
	golang.org/x/text v0.43.0
	golang.org/x/time v0.16.0
)

require (
	github.com/google/jsonschema-go v0.4.2 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/spf13/cast v1.7.1 // indirect
	github.com/yosida95/uritemplate/v3 v3.0.2 // indirect
)

require (
	github.com/hanwen/go-fuse/v2 v2.12.1
	github.com/mark3labs/mcp-go v1.2.1
	go.etcd.io/bbolt v1.5.0
	golang.org/x/sys v0.45.0 // indirect
)
