package raftnode

//go:generate go run golang.org/x/tools/cmd/stringer@v0.30.0 -type=Role -trimprefix=Role -output=role_string.go

// Role is a member's part in the group, as Status reports it.
type Role int32

const (
	// RoleFollower follows a leader (or waits for one) and votes.
	RoleFollower Role = iota
	// RolePreCandidate probes whether it could win an election (raft's
	// pre-vote) before becoming a candidate.
	RolePreCandidate
	// RoleCandidate campaigns for leadership.
	RoleCandidate
	// RoleLeader accepts proposals and replicates the log.
	RoleLeader
	// RoleLearner receives the log but never votes or leads (a ZooKeeper
	// observer).
	RoleLearner
	// RoleStopped is reported by a stopped node.
	RoleStopped
)
