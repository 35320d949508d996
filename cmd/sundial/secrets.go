package main

import (
	"crypto/x509"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"github.com/sundial-scheduler/sundial"
	"github.com/sundial-scheduler/sundial/internal/httpserve"
)

// minSecretLen is the shortest secret a credential flag takes: shorter ones are guessable.
const minSecretLen = sundial.MinTokenLen

// secretFlag is a credential flag: its value comes from the flag (visible in ps), its
// SUNDIAL_ variable, or the file named by its -file twin (one line, as a secret manager or
// a Kubernetes secret mounts it).
type secretFlag struct {
	name  string
	value *string
	file  string
	min   int // shortest value taken; 0 for a secret chosen elsewhere (a mail provider's)
}

// addSecretFlag declares --name and --name-file; help says where to keep the secret.
func addSecretFlag(f *pflag.FlagSet, value *string, name, env, what string, min int) *secretFlag {
	s := &secretFlag{name: name, value: value, min: min}
	length := ""
	if min > 0 {
		length = fmt.Sprintf(" of at least %d characters", min)
	}
	f.StringVar(value, name, "", fmt.Sprintf("%s (a secret%s; prefer %s or --%s-file: flags show in ps)",
		what, length, env, name))
	f.StringVar(&s.file, name+"-file", "", fmt.Sprintf("file holding the %s (first line)", what))
	return s
}

// resolve reads the file if one is named and checks the length of a secret that is set.
func (s *secretFlag) resolve() error {
	if s.file != "" {
		if *s.value != "" {
			return usageErrorf("--%s and --%s-file: give one", s.name, s.name)
		}
		b, err := os.ReadFile(s.file)
		if err != nil {
			return usageErrorf("--%s-file: %v", s.name, err)
		}
		line, _, _ := strings.Cut(string(b), "\n")
		*s.value = strings.TrimSpace(line)
		if *s.value == "" {
			return usageErrorf("--%s-file %s is empty", s.name, s.file)
		}
	}
	if v := *s.value; v != "" && len(v) < s.min {
		return usageErrorf("--%s: a secret needs at least %d characters, got %d", s.name, s.min, len(v))
	}
	return nil
}

// tlsOptions are the --tls-cert and --tls-key flags of a server.
type tlsOptions struct{ cert, key string }

func (o *tlsOptions) add(f *pflag.FlagSet) {
	f.StringVar(&o.cert, "tls-cert", "", "TLS certificate file (PEM): serve HTTPS; reloaded when it changes")
	f.StringVar(&o.key, "tls-key", "", "TLS private key file (PEM), with --tls-cert")
}

// load returns the certificate source, nil without TLS.
func (o tlsOptions) load() (*httpserve.CertFile, error) {
	if o.cert == "" && o.key == "" {
		return nil, nil
	}
	c, err := httpserve.LoadCertFile(o.cert, o.key)
	if err != nil {
		return nil, usageErrorf("--tls-cert/--tls-key: %v", err)
	}
	return c, nil
}

// loadCA reads the CA file of flag name, nil when path is empty.
func loadCA(name, path string) (*x509.CertPool, error) {
	if path == "" {
		return nil, nil
	}
	pool, err := httpserve.LoadCAFile(path)
	if err != nil {
		return nil, usageErrorf("--%s: %v", name, err)
	}
	return pool, nil
}

// executorTLSOptions are a server's flags for mutual TLS with executors.
type executorTLSOptions struct{ cert, key, ca string }

func (o *executorTLSOptions) add(f *pflag.FlagSet) {
	f.StringVar(&o.cert, "executor-tls-cert", "", "client certificate file (PEM) the server presents to executors (mutual TLS); reloaded when it changes")
	f.StringVar(&o.key, "executor-tls-key", "", "private key file (PEM) of --executor-tls-cert")
	f.StringVar(&o.ca, "executor-tls-ca", "", "CA file (PEM) of the executors' certificates: turns on mutual TLS; the executor "+
		"endpoints then refuse executors without a client certificate it signed, and executors' own certificates are verified against it (needs --tls-cert)")
}

// load returns the client certificate (nil without one) and the CA (nil without).
func (o executorTLSOptions) load() (*httpserve.CertFile, *x509.CertPool, error) {
	var cert *httpserve.CertFile
	if o.cert != "" || o.key != "" {
		c, err := httpserve.LoadCertFile(o.cert, o.key)
		if err != nil {
			return nil, nil, usageErrorf("--executor-tls-cert/--executor-tls-key: %v", err)
		}
		cert = c
	}
	ca, err := loadCA("executor-tls-ca", o.ca)
	return cert, ca, err
}

func (o tlsOptions) scheme() string {
	if o.cert != "" {
		return "https"
	}
	return "http"
}
