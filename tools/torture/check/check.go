package check

// Options configure All: one field per checker that takes options.
type Options struct {
	Registers  RegisterOptions
	Sequential SequentialOptions
	Ephemerals EphemeralOptions
	Watches    WatchOptions
	Leaders    LeaderOptions
}

// All runs every checker whose part of h holds records, in the order
// registers, sequential, ephemerals, watches, sessions, locks, leaders.
func All(h History, o Options) []Result {
	var res []Result
	if len(h.Registers) > 0 {
		res = append(res, Registers(h.Registers, o.Registers))
	}
	if len(h.Sequential.Creates)+len(h.Sequential.Listings) > 0 {
		res = append(res, Sequential(h.Sequential, o.Sequential))
	}
	if e := h.Ephemerals; len(e.Creates)+len(e.Deletes)+len(e.Ends)+len(e.Observations) > 0 {
		res = append(res, Ephemerals(e, o.Ephemerals))
	}
	if len(h.Watches.Events)+len(h.Watches.Writes) > 0 {
		res = append(res, Watches(h.Watches, o.Watches))
	}
	if len(h.Sessions.Ops) > 0 {
		res = append(res, Sessions(h.Sessions))
	}
	if len(h.Locks.Holds)+len(h.Locks.Writes) > 0 {
		res = append(res, Locks(h.Locks))
	}
	if len(h.Leaders.Terms) > 0 {
		res = append(res, Leaders(h.Leaders, o.Leaders))
	}
	return res
}
