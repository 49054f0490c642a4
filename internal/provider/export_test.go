package provider

// Register adds p to the registry for the tests of other packages' use of
// it, as a provider's file does from its init function.
func Register(p *Provider, rank int) {
	p.rank = rank
	register(p)
}
