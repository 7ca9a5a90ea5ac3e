package mcpserver

import (
	"github.com/depotfs/depotfs/mcpserver/internal/guide"
	"github.com/depotfs/depotfs/mcpserver/internal/resources"
	"github.com/depotfs/depotfs/mcpserver/internal/tool"
)

// The types clients of this package decode replies into or pass in,
// defined beside the code that produces them.
type (
	// Envelope is the one reply shape of every guide tool: success, data,
	// message, warnings, stats and, on failure, error (see tool.Envelope).
	Envelope = tool.Envelope
	// Failure is the error object of a failed guide tool call.
	Failure = tool.Failure
	// ErrorType says what kind of failure a guide tool reply reports.
	ErrorType = tool.ErrorType
	// IdentityStats counts what one identity did since the server started.
	IdentityStats = tool.IdentityStats
	// Auditor keeps the audit log; *audit.Log implements it.
	Auditor = tool.Auditor
	// EarlyAuditor is an Auditor that can write a write's record while
	// the write commits; *audit.Log and audit.Bursts implement it.
	EarlyAuditor = tool.EarlyAuditor
	// ListUploadsData is the reply data of guide_list_uploads, which
	// "depotfs uploads" decodes.
	ListUploadsData = guide.ListUploadsData
	// DropUploadsData is the reply data of guide_drop_uploads.
	DropUploadsData = guide.DropUploadsData
	// UploadInfo is one chunked upload in those replies.
	UploadInfo = guide.UploadInfo
	// KeptUpload is an upload guide_drop_uploads was asked to drop and kept.
	KeptUpload = guide.KeptUpload
	// SnapshotData is the reply data of guide_snapshot, which "depotfs
	// snapshot" decodes.
	SnapshotData = guide.SnapshotData
	// SnapshotInfo is one snapshot in SnapshotData.
	SnapshotInfo = guide.SnapshotInfo
	// CacheStats is the reply data of guide_cache_stats, which clients
	// such as "depotfs status" decode.
	CacheStats = guide.CacheStats
	// StoreStats are the store's counts in CacheStats.
	StoreStats = guide.StoreStats
	// FetchStats are the fetch broker's counters in CacheStats.
	FetchStats = guide.FetchStats
	// Limits are the configured limits in CacheStats.
	Limits = guide.Limits
	// Caller is the calling identity's share of the per-identity limits
	// in CacheStats; Quota is one of them.
	Caller = guide.Caller
	Quota  = tool.Quota
)

// The error types of the envelope (see the tool.Error* constants).
const (
	ErrorValidation  = tool.ErrorValidation
	ErrorSecurity    = tool.ErrorSecurity
	ErrorNotFound    = tool.ErrorNotFound
	ErrorConflict    = tool.ErrorConflict
	ErrorLimit       = tool.ErrorLimit
	ErrorDiskFull    = tool.ErrorDiskFull
	ErrorRateLimited = tool.ErrorRateLimited
	ErrorSystem      = tool.ErrorSystem
)

// Resource URIs: every depot file is the resource depot:/// followed by its
// percent-encoded path (see package resources).
const (
	// ResourceScheme is the URI scheme of depot file resources.
	ResourceScheme = resources.Scheme
	// ResourceTemplate is the RFC 6570 URI template that addresses every
	// depot file.
	ResourceTemplate = resources.URITemplate
)

// ErrResourceURI is the error of a URI that is not a depot resource.
var ErrResourceURI = resources.ErrURI

// ResourceURI returns the resource URI of a clean depot path.
func ResourceURI(cleanPath string) string { return resources.URI(cleanPath) }

// ParseResourceURI returns the clean depot path a resource URI names, or an
// error wrapping ErrResourceURI.
func ParseResourceURI(uri string) (string, error) { return resources.ParseURI(uri) }
