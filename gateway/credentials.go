package gateway

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentnas/nas/auth"
)

// credentialsFile holds generated owner credentials in the data directory.
const credentialsFile = "credentials"

type storedCredentials struct {
	AccessKey string `json:"access_key"`
	SecretKey string `json:"secret_key"`
}

// OwnerCredentials returns the owner's credentials: NAS_ACCESS_KEY and
// NAS_SECRET_KEY when both are set, else those stored in the data directory,
// else new ones, which are stored (mode 0600) and reported as generated so
// the caller prints them once.
func OwnerCredentials(dataDir string, getenv func(string) string) (c auth.Owner, generated bool, err error) {
	ak, sk := getenv("NAS_ACCESS_KEY"), getenv("NAS_SECRET_KEY")
	if ak != "" || sk != "" {
		if ak == "" || sk == "" {
			return c, false, errors.New("set both NAS_ACCESS_KEY and NAS_SECRET_KEY, or neither")
		}
		return auth.Owner{AccessKey: ak, SecretKey: sk}, false, nil
	}
	path := filepath.Join(dataDir, credentialsFile)
	b, err := os.ReadFile(path)
	if err == nil {
		var st storedCredentials
		if err := json.Unmarshal(b, &st); err != nil || st.AccessKey == "" || st.SecretKey == "" {
			return c, false, fmt.Errorf("read %s: malformed credentials file", path)
		}
		return auth.Owner{AccessKey: st.AccessKey, SecretKey: st.SecretKey}, false, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return c, false, fmt.Errorf("read credentials: %w", err)
	}
	st := storedCredentials{AccessKey: "NAS" + randomString(17, upperAlnum), SecretKey: randomString(40, secretChars)}
	out, _ := json.MarshalIndent(st, "", "  ")
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return c, false, err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return c, false, fmt.Errorf("store credentials: %w", err)
	}
	if _, err := f.Write(append(out, '\n')); err != nil {
		f.Close()
		return c, false, fmt.Errorf("store credentials: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return c, false, err
	}
	if err := f.Close(); err != nil {
		return c, false, err
	}
	return auth.Owner{AccessKey: st.AccessKey, SecretKey: st.SecretKey}, true, nil
}

const (
	upperAlnum  = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	secretChars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
)

func randomString(n int, alphabet string) string {
	b := make([]byte, n)
	rand.Read(b)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b)
}
