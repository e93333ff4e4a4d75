package queue

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Node names. Every item is a persistent sequential node
// "<path>/queue-<infix><seq>", seq being ZooKeeper's ten-digit sequence
// number; nodes without the "queue-" prefix are foreign and left alone.
// The infix is (Curator's encodings, exactly):
//
//   - Queue: none. Items are taken in name order, that is in the order
//     they were put.
//   - PriorityQueue: "1" for a priority >= 0, "0" for a negative one,
//     followed by the priority as 8 upper-case hex digits of its 32-bit
//     two's complement (DistributedPriorityQueue.priorityToString):
//     -1 → "0FFFFFFFF", 0 → "100000000", 10 → "10000000A". Items are taken
//     in name order: lowest priority value first, then in the order put.
//   - DelayQueue: "|" + the due time in Unix milliseconds as upper-case hex
//     (at least 8 digits, Java's "%08X") + "|" (epochToString). Items are
//     taken in due-time order once due; a name without a due time counts
//     as due at 0.
//   - IDQueue: "|" + the id, with "/" and "|" replaced by "_", + "|"
//     (makeIdPath). Items are taken in the order put (names compared with
//     the id part removed, as Curator does).
const itemPrefix = "queue-"

// seqLen is the length of ZooKeeper's sequence suffix.
const seqLen = 10

// PriorityInfix returns the name infix of a PriorityQueue item.
func PriorityInfix(priority int32) string {
	sign := "1"
	if priority < 0 {
		sign = "0"
	}
	return fmt.Sprintf("%s%08X", sign, uint32(priority))
}

// DelayInfix returns the name infix of a DelayQueue item due at until.
func DelayInfix(until time.Time) string {
	return fmt.Sprintf("|%08X|", until.UnixMilli())
}

// FixID returns id as an IDQueue stores it in a node name: "/" and "|"
// become "_".
func FixID(id string) string {
	return strings.NewReplacer("/", "_", "|", "_").Replace(id)
}

// IDInfix returns the name infix of an IDQueue item.
func IDInfix(id string) string { return "|" + FixID(id) + "|" }

// DueTime returns the due time encoded in a DelayQueue node name: the hex
// number between its last two "|" (Curator's getEpoch), or the zero Unix
// time if there is none.
func DueTime(name string) time.Time {
	i2 := strings.LastIndexByte(name, '|')
	i1 := -1
	if i2 > 0 {
		i1 = strings.LastIndexByte(name[:i2], '|')
	}
	if i1 > 0 && i2 > i1+1 {
		if ms, err := strconv.ParseInt(name[i1+1:i2], 16, 64); err == nil {
			return time.UnixMilli(ms)
		}
	}
	return time.UnixMilli(0)
}

// ParseID splits an IDQueue node name into the id and the name without
// it (Curator's parseId: the text between the first two "|"). ok is false
// for a name without two "|"; id is then the whole name.
func ParseID(name string) (id, rest string, ok bool) {
	i1 := strings.IndexByte(name, '|')
	if i1 < 0 {
		return name, name, false
	}
	i2 := strings.IndexByte(name[i1+1:], '|')
	if i2 < 0 {
		return name, name, false
	}
	i2 += i1 + 1
	return name[i1+1 : i2], name[:i1] + name[i2+1:], true
}

// requeueName returns the name prefix an item is put back under: its name
// without the sequence number, so it keeps its priority, due time or id.
// (Curator requeues priority and delay items as plain "queue-" items,
// dropping the priority.)
func requeueName(name string) string {
	if len(name) >= len(itemPrefix)+seqLen {
		if _, err := strconv.ParseUint(name[len(name)-seqLen:], 10, 64); err == nil {
			return name[:len(name)-seqLen]
		}
	}
	return itemPrefix
}

// kind is the ordering of a queue's items.
type kind int

const (
	fifo kind = iota
	priority
	delay
	byID
)

// sortItems keeps the item nodes among names and sorts them in the order
// they are to be taken.
func sortItems(k kind, names []string) []string {
	items := slices.DeleteFunc(names, func(n string) bool { return !strings.HasPrefix(n, itemPrefix) })
	switch k {
	case delay:
		slices.SortFunc(items, func(a, b string) int {
			return cmp.Or(DueTime(a).Compare(DueTime(b)), strings.Compare(a, b))
		})
	case byID:
		slices.SortFunc(items, func(a, b string) int {
			_, ra, _ := ParseID(a)
			_, rb, _ := ParseID(b)
			return cmp.Or(strings.Compare(ra, rb), strings.Compare(a, b))
		})
	default:
		slices.Sort(items)
	}
	return items
}
