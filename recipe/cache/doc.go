// Package cache keeps ZooKeeper data in memory and follows its changes:
// NodeCache (one node), ChildrenCache (a node's children, Curator's
// PathChildrenCache) and TreeCache (a subtree, Curator's TreeCache and
// CuratorCache).
package cache
