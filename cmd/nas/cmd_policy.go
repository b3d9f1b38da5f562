package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"github.com/agentnas/nas/apiv1"
)

// newPolicyCmd builds `nas policy`: the rules that decide proposals.
func newPolicyCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "policy", Short: "The rules that decide proposals (merge, gate or refuse)"}
	cmd.AddCommand(newPolicyGetCmd(), newPolicySetCmd())
	return cmd
}

// policyGetOptions are the argument of `nas policy get`.
type policyGetOptions struct{ repo string }

// newPolicyGetCmd builds `nas policy get`.
func newPolicyGetCmd() *cobra.Command {
	var o policyGetOptions
	return &cobra.Command{
		Use:   "get REPO",
		Short: "Print a repository's policy",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.repo = args[0]
			return runPolicyGet(cmd.Context(), o)
		},
	}
}

// runPolicyGet prints the repository's policy as JSON.
func runPolicyGet(ctx context.Context, o policyGetOptions) error {
	return jsonCall(ctx, apiv1.PolicyGetRequest{Repo: o.repo}, &apiv1.PolicyResponse{})
}

// policySetOptions are the arguments of `nas policy set`.
type policySetOptions struct{ repo, file string }

// newPolicySetCmd builds `nas policy set`.
func newPolicySetCmd() *cobra.Command {
	var o policySetOptions
	return &cobra.Command{
		Use:   "set REPO FILE",
		Short: "Replace a repository's policy with a JSON or YAML rules file",
		Args:  exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.repo, o.file = args[0], args[1]
			return runPolicySet(cmd.Context(), o)
		},
	}
}

// runPolicySet replaces the repository's policy with the rules file and
// prints the new policy as JSON.
func runPolicySet(ctx context.Context, o policySetOptions) error {
	pol, err := readPolicy(o.file)
	if err != nil {
		return err
	}
	return jsonCall(ctx, apiv1.PolicySetRequest{Repo: o.repo, Policy: pol}, &apiv1.PolicyResponse{})
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
