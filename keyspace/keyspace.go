// Package keyspace is the one registry of the gateway's kv key spaces.
// Every key any package stores starts with exactly one of the prefixes
// below; a package builds its keys from its own constants here and from no
// other literal, and never reads or writes a space it does not own except
// through the owner's functions. The test of this package checks that the
// prefixes are disjoint, that each is documented in its owner's doc.go
// ("kv layout"), and that no storage package spells a prefix as a literal.
//
// The layout after each prefix (IDs, hashes, escaping) belongs to the owner
// and is described in its doc.go.
package keyspace

// Prefixes, grouped by owner.
const (
	// branch: repositories, branches, staging, versions, uploads,
	// checkpoints, trash and per-repository configuration documents.
	Repo         = "R/"
	Branch       = "B/"
	Stage        = "S/"
	StageWriter  = "SW/"
	Version      = "V/"
	KeyVersion   = "K/"
	CommitInfo   = "C/"
	Upload       = "U/"
	Part         = "P/"
	Checkpoint   = "CK/"
	Trash        = "TR/"
	TrashJournal = "TQ/"
	RepoConfig   = "RC/"
	// DeletedBranch keeps a deleted branch restorable for a while.
	DeletedBranch = "BD/"
	// Scratch indexes scratch files by when they expire.
	Scratch = "SX/"
	// BranchUsage is a quota branch's usage, kept in the store when
	// gateways share it.
	BranchUsage = "BU/"
	// ListMark marks a content list a write referenced while another
	// gateway collected, so that collection spares it.
	ListMark = "LM/"

	// manifest: immutable values keyed by their hash.
	Node    = "n/"
	Content = "l/"
	Commit  = "m/"

	// cas: where each chunk is.
	Chunk = "c/"

	// auth: leases, credentials, roles, usage and token keys.
	Lease        = "LS/"
	AccessKey    = "LK/"
	LeaseChild   = "LC/"
	LeaseRun     = "LR/"
	LeaseUsage   = "LU/"
	Role         = "RO/"
	TokenKeys    = "KEY/"
	OwnerSession = "OS/"
	MCPToken     = "MT/"
	WebSession   = "WS/"
	RunTaint     = "RT/"

	// record: the flight recorder, its indexes and read manifests.
	Record       = "F/"
	RecordIndex  = "FX/"
	ReadManifest = "FR/"

	// gate: proposals, gates and policies.
	Proposal = "PR/"
	Gate     = "GT/"
	Policy   = "POL/"
	// ProposalHeads finds the proposal whose checks ran on a diff, by
	// its heads, for a direct merge of the same diff.
	ProposalHeads = "PRH/"

	// check: pre-merge checks, the branches that require them, and
	// their results per proposal.
	Check        = "CHK/"
	CheckRule    = "CHQ/"
	CheckSubject = "CHS/"
	CheckResult  = "CHR/"
	CheckPending = "CHP/"

	// source: attachments and their side index.
	Source      = "SRC/"
	SourceIndex = "MI/"

	// api: answers of idempotent control calls.
	Idempotency = "I/"

	// gateway: the gateways sharing a metadata store, and the locks they
	// serialize branch work and collections with.
	Gateway = "GW/"
	Lock    = "GL/"
	// Epoch is the collection running across the gateways: its start and
	// the gateways that take part.
	Epoch = "GE/"

	// hook: webhooks and their delivery logs.
	Hook         = "HK/"
	HookDelivery = "HD/"
)

// Space is one registered key space.
type Space struct {
	Prefix string
	// Owner is the package that reads and writes the space.
	Owner string
	// Doc says what the values are.
	Doc string
}

// All lists every key space.
var All = []Space{
	{Repo, "branch", "repository record"},
	{Branch, "branch", "branch record"},
	{Stage, "branch", "staged write or tombstone, per generation"},
	{StageWriter, "branch", "the leases whose writes a staging generation holds"},
	{Version, "branch", "version record"},
	{KeyVersion, "branch", "a key's versions, newest first"},
	{CommitInfo, "branch", "commit lineage information"},
	{Upload, "branch", "multipart upload"},
	{Part, "branch", "uploaded part"},
	{Checkpoint, "branch", "named checkpoint of a branch"},
	{Trash, "branch", "trash entry: what a merge removed from a protected branch"},
	{TrashJournal, "branch", "trash entries a large merge still owes (a crash left them)"},
	{RepoConfig, "branch", "a repository's named configuration document (bucket tagging, ...)"},
	{DeletedBranch, "branch", "a deleted branch's head and fork point, restorable for a retention window"},
	{Scratch, "branch", "scratch files by expiry, for the sweep that deletes them"},
	{BranchUsage, "branch", "a quota branch's usage (bytes, objects), with several gateways"},
	{ListMark, "branch", "a content list written while another gateway collects, with that collection's ID"},
	{Node, "manifest", "tree node"},
	{Content, "manifest", "content list"},
	{Commit, "manifest", "commit"},
	{Chunk, "cas", "chunk index record"},
	{Hook, "hook", "a repository's webhook: URL, events, secret, delivery cursor"},
	{HookDelivery, "hook", "a webhook's delivery log, by event sequence"},
	{Lease, "auth", "lease"},
	{AccessKey, "auth", "the lease of an access key"},
	{LeaseChild, "auth", "children index, for cascading revocation"},
	{LeaseRun, "auth", "a run's branch and latest lease"},
	{LeaseUsage, "auth", "usage counters"},
	{Role, "auth", "role envelope"},
	{TokenKeys, "auth", "the gateway's token and secret keys"},
	{OwnerSession, "auth", "owner session (STS GetSessionToken)"},
	{MCPToken, "auth", "the lease an MCP bearer token (by its SHA-256) belongs to"},
	{WebSession, "auth", "a control-room session (by its token's SHA-256)"},
	{RunTaint, "auth", "a run's session taint: the labels of what it has read"},
	{Record, "record", "chain head and records"},
	{RecordIndex, "record", "record indexes by run, lease and commit"},
	{ReadManifest, "record", "read manifest pages and summaries"},
	{Proposal, "gate", "proposal"},
	{Gate, "gate", "gate"},
	{Policy, "gate", "a repository's policy"},
	{ProposalHeads, "gate", "the latest proposal with checks of a diff, by its target and heads"},
	{Check, "check", "a repository's pre-merge check: webhook URL and secret, or command"},
	{CheckRule, "check", "the checks a merge into a branch requires"},
	{CheckSubject, "check", "what a proposal's checks are sent (the proposal, its diff and digest)"},
	{CheckResult, "check", "one check's result on one proposal, bound to its digest"},
	{CheckPending, "check", "the results still pending, for the runner to find without scanning them all"},
	{Source, "source", "attachment record"},
	{SourceIndex, "source", "side index of materialised blocks"},
	{Idempotency, "api", "the answer of an idempotent control call"},
	{Gateway, "gateway", "a gateway sharing the metadata store: its ID and heartbeat"},
	{Lock, "gateway", "a lock held across gateways (a branch's commits, a collection)"},
	{Epoch, "gateway", "the collection running across gateways: its ID, start and the gateways taking part"},
}
