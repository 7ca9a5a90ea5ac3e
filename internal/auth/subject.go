package auth

import (
	"fmt"
	"net/url"
	"strings"
)

// Scheme is the URI scheme of depotfs identities.
const Scheme = "depotfs"

// LocalDomain is the domain of identities that belong to this host alone:
// certificates issued without --domain (depotfs://local/agent/<name>) and
// bearer tokens (depotfs://local/token/<name>).
const LocalDomain = "local"

// TokenURI returns the identity of the bearer token named name,
// depotfs://local/token/<name>: a namespace of its own, so a token and a
// certificate issued for the same name (certificates are
// depotfs://<domain>/agent/<name>, local by default) are different
// callers in grants, replies and the audit log.
func TokenURI(name string) (*url.URL, error) {
	if err := CheckName(name); err != nil {
		return nil, err
	}
	return &url.URL{Scheme: Scheme, Host: LocalDomain, Path: "/token/" + name}, nil
}

// AgentURI returns the identity URI of agent name in domain,
// depotfs://<domain>/agent/<name>, after checking both: a domain is a
// lower-case DNS name, a name 1 to 64 letters, digits, '.', '_' or '-'
// not starting with '.' or '-'.
func AgentURI(domain, name string) (*url.URL, error) {
	if err := checkDomain(domain); err != nil {
		return nil, err
	}
	if err := CheckName(name); err != nil {
		return nil, err
	}
	return &url.URL{Scheme: Scheme, Host: domain, Path: "/agent/" + name}, nil
}

// CheckName reports whether name can name an agent or a token.
func CheckName(name string) error {
	if name == "" || len(name) > 64 || name[0] == '.' || name[0] == '-' {
		return fmt.Errorf("name %q: want 1 to 64 characters, not starting with '.' or '-'", name)
	}
	if strings.Trim(name, nameChars) != "" {
		return fmt.Errorf("name %q: only letters, digits, '.', '_' and '-'", name)
	}
	return nil
}

// nameChars are the characters of agent, token and tool names.
const nameChars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-"

func checkDomain(domain string) error {
	if domain == "" || len(domain) > 253 {
		return fmt.Errorf("domain %q: want a DNS name", domain)
	}
	for _, label := range strings.Split(domain, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' ||
			strings.Trim(label, "abcdefghijklmnopqrstuvwxyz0123456789-") != "" {
			return fmt.Errorf("domain %q: want a lower-case DNS name such as example.org", domain)
		}
	}
	return nil
}

// parseAgentURI checks that u is exactly depotfs://<domain>/agent/<name>
// in canonical form and returns it as a string.
func parseAgentURI(u *url.URL) (string, error) {
	name, ok := strings.CutPrefix(u.Path, "/agent/")
	if !ok || u.Scheme != Scheme || u.Opaque != "" || u.User != nil || u.RawQuery != "" || u.ForceQuery ||
		u.Fragment != "" || u.RawPath != "" || u.Port() != "" {
		return "", fmt.Errorf("%w: URI SAN %q is not %s://<domain>/agent/<name>", ErrSubject, u, Scheme)
	}
	want, err := AgentURI(u.Host, name)
	if err != nil {
		return "", fmt.Errorf("%w: URI SAN %q: %w", ErrSubject, u, err)
	}
	if want.String() != u.String() {
		return "", fmt.Errorf("%w: URI SAN %q is not in canonical form %q", ErrSubject, u, want)
	}
	return want.String(), nil
}
