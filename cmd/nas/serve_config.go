package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/pflag"
	"gopkg.in/yaml.v3"
)

// Every flag of `nas serve` is set, strongest first, by the command line,
// by the environment variable envName(flag), by the key of the same name
// in the --config file, or by its default. Credentials (NAS_ACCESS_KEY,
// NAS_SECRET_KEY) are not flags and keep their own rules.

// envName is the environment variable of a serve flag: NAS_ and the flag's
// name in upper case with "-" as "_" (--log-format is NAS_LOG_FORMAT).
func envName(flag string) string {
	return "NAS_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// resolveServeFlags fills the serve flags that the command line left
// unset, from the environment and then the config file (--config or
// NAS_CONFIG). An unknown key in the file is an error naming it.
func resolveServeFlags(fs *pflag.FlagSet, getenv func(string) string) error {
	if err := setFromEnv(fs, getenv); err != nil {
		return err
	}
	path := fs.Lookup("config").Value.String()
	if path == "" {
		return nil
	}
	file, err := readServeConfig(path, fs)
	if err != nil {
		return err
	}
	var errs []error
	fs.VisitAll(func(f *pflag.Flag) {
		v, ok := file[f.Name]
		if !ok || f.Changed || getenv(envName(f.Name)) != "" {
			return
		}
		if err := setFlag(f, v); err != nil {
			errs = append(errs, usagef("%s: %s: %w", path, f.Name, err))
		}
	})
	return errors.Join(errs...)
}

// setFromEnv sets each flag not given on the command line whose
// environment variable is set.
func setFromEnv(fs *pflag.FlagSet, getenv func(string) string) error {
	var errs []error
	fs.VisitAll(func(f *pflag.Flag) {
		v := getenv(envName(f.Name))
		if f.Changed || v == "" {
			return
		}
		if err := f.Value.Set(v); err != nil {
			errs = append(errs, usagef("%s: %w", envName(f.Name), err))
		}
	})
	return errors.Join(errs...)
}

// readServeConfig reads a YAML config file: a mapping from flag names to
// values (a list for a flag that takes several).
func readServeConfig(path string, fs *pflag.FlagSet) (map[string]any, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, usagef("--config: %w", err)
	}
	var file map[string]any
	dec := yaml.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&file); err != nil && !errors.Is(err, io.EOF) {
		return nil, usagef("%s: %w", path, err)
	}
	for k := range file {
		if f := fs.Lookup(k); f == nil || k == "config" {
			return nil, usagef("%s: unknown key %q (the keys are the flags of nas serve, without --config)", path, k)
		}
	}
	return file, nil
}

// setFlag sets f from a value decoded from YAML.
func setFlag(f *pflag.Flag, v any) error {
	list, isList := v.([]any)
	if sv, ok := f.Value.(pflag.SliceValue); ok {
		if !isList {
			list = []any{v}
		}
		s := make([]string, len(list))
		for i, e := range list {
			s[i] = fmt.Sprint(e)
		}
		return sv.Replace(s)
	}
	if _, isMap := v.(map[string]any); isMap || isList || v == nil {
		return fmt.Errorf("want a single value, got %v", v)
	}
	return f.Value.Set(fmt.Sprint(v))
}
