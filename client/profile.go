package client

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/aws/aws-sdk-go-v2/config"
)

// profile is what a profile of the AWS shared files gives a client.
type profile struct {
	accessKey, secretKey, sessionToken string
	endpoint                           string // endpoint_url, "" if none
}

// loadProfile reads the named profile from the AWS shared credentials and
// config files (AWS_SHARED_CREDENTIALS_FILE and AWS_CONFIG_FILE, default
// ~/.aws/credentials and ~/.aws/config), as the AWS CLI and SDKs do. Only
// static keys are taken: a profile that gets its keys from SSO, a process
// or another role is refused when explicit, because the gateway is not
// AWS, and passed over otherwise. A profile that does not exist gives ok
// false and no error.
func loadProfile(name string, explicit bool) (p profile, ok bool, err error) {
	// Reading two local files needs no cancellation; the SDK uses the
	// context only for its logger.
	sc, err := config.LoadSharedConfigProfile(context.Background(), name, func(o *config.LoadSharedConfigOptions) {
		o.CredentialsFiles = []string{cmp.Or(os.Getenv("AWS_SHARED_CREDENTIALS_FILE"), config.DefaultSharedCredentialsFilename())}
		o.ConfigFiles = []string{cmp.Or(os.Getenv("AWS_CONFIG_FILE"), config.DefaultSharedConfigFilename())}
	})
	var missing config.SharedConfigProfileNotExistError
	if errors.As(err, &missing) {
		return profile{}, false, nil
	}
	if err != nil {
		return profile{}, false, fmt.Errorf("AWS profile %q: %w", name, err)
	}
	c := sc.Credentials
	if c.AccessKeyID == "" || c.SecretAccessKey == "" {
		if !explicit {
			return profile{}, false, nil
		}
		return profile{}, false, fmt.Errorf("AWS profile %q has no aws_access_key_id and aws_secret_access_key (roles, SSO and credential_process are not used with the gateway): %w", name, ErrNoCredentials)
	}
	return profile{accessKey: c.AccessKeyID, secretKey: c.SecretAccessKey, sessionToken: c.SessionToken, endpoint: sc.BaseEndpoint}, true, nil
}

// envProfile is the profile AWS_PROFILE names, else "default".
func envProfile() string {
	if p := os.Getenv("AWS_PROFILE"); p != "" {
		return p
	}
	return "default"
}
