package api

// outage tells a stream's owner when the stream stopped because no
// controller (or hub) would take it back (unavailable: a restart, a
// leader election, a controller behind the hub down), and when it
// resumed: a watch or followed log would otherwise just go quiet. A
// stream that resumes at once (the hub ends a call when its session token
// expires, every 15 minutes) reports nothing.
type outage struct {
	notify func(err error)
	in     bool
}

// failed reports err, the first refusal of an outage.
func (o *outage) failed(err error) {
	if o.notify != nil && !o.in {
		o.in = true
		o.notify(err)
	}
}

// ended reports that the stream resumed after an outage.
func (o *outage) ended() {
	if o.notify != nil && o.in {
		o.in = false
		o.notify(nil)
	}
}
