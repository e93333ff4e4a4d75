package tlsconf

// What the external tests (package tlsconf_test, which may import
// tests/framework/tlstest) check of the unexported parts.
var (
	SniffStore  = sniffStore
	KeyAndChain = keyAndChain
)

const (
	FormatPEM     = formatPEM
	FormatPKCS12  = formatPKCS12
	FormatJKS     = formatJKS
	MaxStoreBytes = maxStoreBytes
)
