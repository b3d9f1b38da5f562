package main

import (
	"bufio"
	"fmt"
	"net/url"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	nasclient "github.com/agentnas/nas/client"
)

// aliasView is an alias as `nas alias list` and `set` show it: never the
// secret or the session token.
type aliasView struct {
	Name      string `json:"name"`
	URL       string `json:"url"`
	AccessKey string `json:"access_key"`
	Temporary bool   `json:"temporary"` // it holds a session token
}

// aliasListResponse is what `nas alias list --json` prints.
type aliasListResponse struct {
	Path    string      `json:"path"`
	Aliases []aliasView `json:"aliases"`
}

// newAliasCmd builds `nas alias`: named gateways and their credentials in
// the user's alias file.
func newAliasCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "alias", Short: "Name gateways and their credentials (used with --alias NAME)",
		Long: "Aliases live in $NAS_CONFIG_DIR/aliases.json, else ~/.config/nas/aliases.json (mode 0600; a file others can read is refused)."}
	cmd.AddCommand(newAliasSetCmd(), newAliasListCmd(), newAliasRemoveCmd())
	return cmd
}

// newAliasSetCmd builds `nas alias set`.
func newAliasSetCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "set NAME URL --access-key AK [--secret-key SK] [--session-token T]",
		Short: "Add or replace an alias; without --secret-key the secret is read from standard input (hidden on a terminal)",
		Args:  exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runAliasSet(args[0], args[1])
		},
	}
}

// runAliasSet stores the alias name for the gateway at rawURL with the
// credential flags.
func runAliasSet(name, rawURL string) error {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") {
		return usagef("alias URL %q: want http://HOST[:PORT] or https://HOST[:PORT]", rawURL)
	}
	if cf.accessKey == "" {
		return usagef("nas alias set needs --access-key")
	}
	secret := cf.secretKey
	if secret == "" {
		if secret, err = readSecret(); err != nil {
			return err
		}
	}
	path, err := nasclient.AliasPath()
	if err != nil {
		return err
	}
	a := nasclient.Alias{Name: name, URL: strings.TrimSuffix(rawURL, "/"), AccessKey: cf.accessKey, SecretKey: secret, SessionToken: cf.sessionToken}
	if err := nasclient.SaveAlias(path, a); err != nil {
		return usageError{err}
	}
	if cf.json {
		return printJSON(viewAlias(a))
	}
	fmt.Printf("alias %s: %s (saved in %s)\n", name, a.URL, path)
	return nil
}

// readSecret reads the secret key from standard input: hidden after a
// prompt on a terminal, the first line otherwise.
func readSecret() (string, error) {
	fd := int(os.Stdin.Fd())
	if term.IsTerminal(fd) {
		fmt.Fprint(os.Stderr, "secret key: ")
		b, err := term.ReadPassword(fd)
		fmt.Fprintln(os.Stderr)
		if err != nil {
			return "", fmt.Errorf("read secret key: %w", err)
		}
		return strings.TrimSpace(string(b)), nil
	}
	line, err := bufio.NewReader(os.Stdin).ReadString('\n')
	if line = strings.TrimSpace(line); line == "" {
		return "", usagef("no --secret-key and none on standard input (%v)", err)
	}
	return line, nil
}

// viewAlias is what may be shown of a.
func viewAlias(a nasclient.Alias) aliasView {
	return aliasView{Name: a.Name, URL: a.URL, AccessKey: a.AccessKey, Temporary: a.SessionToken != ""}
}

// newAliasListCmd builds `nas alias list`.
func newAliasListCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List aliases (never their secrets)",
		Args:  exactArgs(0),
		RunE:  func(*cobra.Command, []string) error { return runAliasList() },
	}
}

// runAliasList prints the aliases.
func runAliasList() error {
	path, err := nasclient.AliasPath()
	if err != nil {
		return err
	}
	all, err := nasclient.LoadAliases(path)
	if err != nil {
		return err
	}
	resp := aliasListResponse{Path: path, Aliases: []aliasView{}}
	for _, n := range nasclient.AliasNames(all) {
		resp.Aliases = append(resp.Aliases, viewAlias(all[n]))
	}
	if cf.json {
		return printJSON(resp)
	}
	for _, a := range resp.Aliases {
		fmt.Printf("%s\t%s\t%s\n", a.Name, a.URL, a.AccessKey)
	}
	return nil
}

// newAliasRemoveCmd builds `nas alias remove`.
func newAliasRemoveCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "remove NAME",
		Short: "Remove an alias",
		Args:  exactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			path, err := nasclient.AliasPath()
			if err != nil {
				return err
			}
			if err := nasclient.RemoveAlias(path, args[0]); err != nil {
				return err
			}
			if cf.json {
				return printJSON(struct {
					Removed string `json:"removed"`
				}{args[0]})
			}
			fmt.Println("removed alias", args[0])
			return nil
		},
	}
}
