// Package ca is depotfs's small certificate authority for agents: a CA key
// and certificate in a directory, agent certificates carrying a depotfs
// URI SAN and grants, server certificates for the HTTPS listener, a list
// of revoked serials and the CRL signed from it.
//
// A CA directory holds:
//
//	ca.crt        the CA certificate (give it to servers as --client-ca, and to agents to trust the server)
//	ca.key        its private key, mode 0600
//	crl.pem       the current CRL (servers read it as --crl)
//	revoked.json  the revoked serials and the last CRL number
//	.lock         serializes changes by concurrent depotfs processes
//
// Every function is safe to call from several processes on one directory;
// changes are written atomically. The package holds no state beyond a CA
// value, which is safe for concurrent use.
package ca
