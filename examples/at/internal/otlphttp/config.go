package otlphttp

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

// Config says where and how to send.
type Config struct {
	// URL is the full URL spans are posted to, such as
	// "http://localhost:4318/v1/traces".
	URL string
	// Headers are added to every request.
	Headers map[string]string
	// Timeout bounds one export, its retries included. Default 10s.
	Timeout time.Duration
	// Gzip compresses the body.
	Gzip bool
	// TLS is the client's TLS configuration for an https URL; nil: the
	// system's roots.
	TLS *tls.Config
}

// defaultTimeout is OTEL_EXPORTER_OTLP_TIMEOUT's default.
const defaultTimeout = 10 * time.Second

// tracesPath is what OTLP/HTTP appends to a base endpoint for traces.
const tracesPath = "v1/traces"

// FromEnv reads the standard variables of the OTLP exporter specification
// through getenv (os.Getenv), each OTEL_EXPORTER_OTLP_TRACES_* variable
// before its OTEL_EXPORTER_OTLP_* twin:
//
//   - the URL: endpoint when not empty, else OTEL_EXPORTER_OTLP_ENDPOINT,
//     each a base URL to which "v1/traces" is appended
//     ("http://collector:4318" posts to "http://collector:4318/v1/traces");
//     OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is used as it is, and comes
//     before OTEL_EXPORTER_OTLP_ENDPOINT (not before endpoint);
//   - _HEADERS ("key=value,key2=value2", values percent-encoded),
//     _TIMEOUT (milliseconds), _COMPRESSION ("gzip" or "none");
//   - _CERTIFICATE (the PEM file of the roots to trust), _CLIENT_CERTIFICATE
//     and _CLIENT_KEY (PEM files of a client certificate);
//   - _PROTOCOL must be "http/protobuf" or unset: this package speaks
//     nothing else.
//
// It says ok false when neither endpoint nor a variable names where to
// send: the operator then does not trace.
func FromEnv(endpoint string, getenv func(string) string) (cfg Config, ok bool, err error) {
	get := func(name string) (string, string) {
		if v := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_TRACES_" + name)); v != "" {
			return v, "OTEL_EXPORTER_OTLP_TRACES_" + name
		}
		return strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_" + name)), "OTEL_EXPORTER_OTLP_" + name
	}
	var errs []error
	switch tracesURL, generic := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")), strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_ENDPOINT")); {
	case endpoint != "":
		cfg.URL, err = signalURL(endpoint, true)
		if err != nil {
			errs = append(errs, fmt.Errorf("--tracing-endpoint %q: %w", endpoint, err))
		}
	case tracesURL != "":
		cfg.URL, err = signalURL(tracesURL, false)
		if err != nil {
			errs = append(errs, fmt.Errorf("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT %q: %w", tracesURL, err))
		}
	case generic != "":
		cfg.URL, err = signalURL(generic, true)
		if err != nil {
			errs = append(errs, fmt.Errorf("OTEL_EXPORTER_OTLP_ENDPOINT %q: %w", generic, err))
		}
	default:
		return Config{}, false, nil
	}
	if v, name := get("PROTOCOL"); v != "" && v != "http/protobuf" {
		errs = append(errs, fmt.Errorf("%s %q: this binary exports by OTLP/HTTP with protobuf only; want \"http/protobuf\" or unset", name, v))
	}
	if v, name := get("HEADERS"); v != "" {
		if cfg.Headers, err = parseHeaders(v); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
		}
	}
	cfg.Timeout = defaultTimeout
	if v, name := get("TIMEOUT"); v != "" {
		ms, err := strconv.Atoi(v)
		if err != nil || ms <= 0 {
			errs = append(errs, fmt.Errorf("%s %q: want a positive number of milliseconds", name, v))
		} else {
			cfg.Timeout = time.Duration(ms) * time.Millisecond
		}
	}
	switch v, name := get("COMPRESSION"); v {
	case "", "none":
	case "gzip":
		cfg.Gzip = true
	default:
		errs = append(errs, fmt.Errorf("%s %q: want \"gzip\" or \"none\"", name, v))
	}
	if tc, err := tlsConfig(get); err != nil {
		errs = append(errs, err)
	} else {
		cfg.TLS = tc
	}
	if err := errors.Join(errs...); err != nil {
		return Config{}, true, err
	}
	return cfg, true, nil
}

// signalURL checks raw and, for a base URL, appends the traces path.
func signalURL(raw string, base bool) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", err
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", errors.New(`want an http or https URL, such as "http://localhost:4318"`)
	}
	if u.Host == "" {
		return "", errors.New("no host")
	}
	if base {
		u = u.JoinPath(tracesPath)
	}
	return u.String(), nil
}

// parseHeaders reads "k=v,k2=v2", the W3C baggage form the specification
// gives the variable, values percent-decoded.
func parseHeaders(s string) (map[string]string, error) {
	h := map[string]string{}
	for kv := range strings.SplitSeq(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, fmt.Errorf("%q is not key=value", strings.TrimSpace(kv))
		}
		dv, err := url.PathUnescape(strings.TrimSpace(v))
		if err != nil {
			return nil, fmt.Errorf("the value of %q: %w", k, err)
		}
		h[k] = dv
	}
	return h, nil
}

// tlsConfig is nil when no certificate variable is set.
func tlsConfig(get func(string) (string, string)) (*tls.Config, error) {
	ca, caName := get("CERTIFICATE")
	cert, certName := get("CLIENT_CERTIFICATE")
	key, keyName := get("CLIENT_KEY")
	if ca == "" && cert == "" && key == "" {
		return nil, nil
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if ca != "" {
		pem, err := os.ReadFile(ca)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", caName, err)
		}
		tc.RootCAs = x509.NewCertPool()
		if !tc.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%s %q: no PEM certificate in it", caName, ca)
		}
	}
	if (cert == "") != (key == "") {
		return nil, fmt.Errorf("%s and %s go together: set both or neither", certName, keyName)
	}
	if cert != "" {
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("%s, %s: %w", certName, keyName, err)
		}
		tc.Certificates = []tls.Certificate{pair}
	}
	return tc, nil
}

// validate reports a Config that New cannot use.
func (c Config) validate() error {
	if _, err := signalURL(c.URL, false); err != nil {
		return fmt.Errorf("otlphttp: URL %q: %w", c.URL, err)
	}
	if c.Timeout < 0 {
		return fmt.Errorf("otlphttp: Timeout %s: want a positive duration, or 0 for the default", c.Timeout)
	}
	return nil
}
