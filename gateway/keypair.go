package gateway

import (
	"crypto/tls"
	"fmt"
	"sync"
)

// KeyPair is a TLS certificate and key loaded from two PEM files, served
// through tls.Config.GetCertificate so that Reload can replace it while
// the gateway serves: new handshakes get the new certificate, established
// connections keep theirs.
type KeyPair struct {
	certFile, keyFile string

	mu   sync.RWMutex // guards cert
	cert *tls.Certificate
}

// LoadKeyPair reads the certificate and key files.
func LoadKeyPair(certFile, keyFile string) (*KeyPair, error) {
	kp := &KeyPair{certFile: certFile, keyFile: keyFile}
	if err := kp.Reload(); err != nil {
		return nil, err
	}
	return kp, nil
}

// Reload reads the files again. When they do not hold a valid pair, it
// returns the error and the certificate served so far stays.
func (kp *KeyPair) Reload() error {
	cert, err := tls.LoadX509KeyPair(kp.certFile, kp.keyFile)
	if err != nil {
		return fmt.Errorf("load TLS key pair: %w", err)
	}
	kp.mu.Lock()
	kp.cert = &cert
	kp.mu.Unlock()
	return nil
}

// GetCertificate returns the current certificate, for
// tls.Config.GetCertificate.
func (kp *KeyPair) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	kp.mu.RLock()
	defer kp.mu.RUnlock()
	return kp.cert, nil
}
