package main

import (
	"bytes"
	"encoding/json"
	"os"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"github.com/agentnas/nas/apiv1"
)

func newPolicyCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "policy", Short: "The rules that decide proposals (merge, gate or refuse)"}
	get := &cobra.Command{Use: "get REPO", Short: "Print a repository's policy", Args: exactArgs(1), RunE: func(cmd *cobra.Command, args []string) error {
		return jsonCall(cmd.Context(), apiv1.PolicyGetRequest{Repo: args[0]}, &apiv1.PolicyResponse{})
	}}
	set := &cobra.Command{Use: "set REPO FILE", Short: "Replace a repository's policy with a JSON or YAML rules file", Args: exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			pol, err := readPolicy(args[1])
			if err != nil {
				return err
			}
			return jsonCall(cmd.Context(), apiv1.PolicySetRequest{Repo: args[0], Policy: pol}, &apiv1.PolicyResponse{})
		}}
	cmd.AddCommand(get, set)
	return cmd
}

// readPolicy reads a YAML (or JSON, a subset of YAML) rules file. Its
// fields are the API's (max_changes, ...); an unknown one is refused.
func readPolicy(path string) (apiv1.Policy, error) {
	var pol apiv1.Policy
	b, err := os.ReadFile(path)
	if err != nil {
		return pol, err
	}
	var doc any
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return pol, usagef("%s: %v", path, err)
	}
	j, err := json.Marshal(doc)
	if err != nil {
		return pol, usagef("%s: %v", path, err)
	}
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&pol); err != nil {
		return pol, usagef("%s: %v", path, err)
	}
	return pol, nil
}
