package curator_test

import (
	"crypto/x509"

	"software.sslmate.com/src/go-pkcs12"
)

func encodePKCS12(key any, leaf, ca *x509.Certificate, password string) ([]byte, error) {
	return pkcs12.Modern.Encode(key, leaf, []*x509.Certificate{ca}, password)
}
