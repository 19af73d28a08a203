package emulate

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"convtgen/gen/plan"
)

// A spectral submission (plan.Spectral) computes no convolution output:
// its whole forward is its own kernels, so the host wrapper's forward
// runs here as it is, each launch through the emulator, against the same
// torch stand-in as a chain's (without the convolution's part).

// spectralConstants are what chainMain reads besides chainConstants: the
// weight's and the bias's lengths.
const spectralConstants = `
static constexpr size_t emu_w_len = %d, emu_bias_len = %d;
`

// BuildSpectral compiles the forward of an emitted spectral submission
// (its KERNEL_SOURCE and HOST_SOURCE; plan p) into a host program under
// dir.
func BuildSpectral(ctx context.Context, cxx, dir, kernel, host string, p *plan.Plan) (*ChainProgram, error) {
	if p.Spectral == nil {
		return nil, errors.New("emulate: not a spectral plan (BuildChain runs the others)")
	}
	k, err := hostSource(kernel, 0)
	if err != nil {
		return nil, err
	}
	fwd, name, err := emuForward(strings.Replace(host, "#include <torch/extension.h>", "", 1))
	if err != nil {
		return nil, err
	}
	ch, c := p.Epilogue.Chain, p.Conv
	var lens, ints strings.Builder
	for _, e := range ch.Extras {
		fmt.Fprintf(&lens, "%d, ", e.Len)
		fmt.Fprintf(&ints, "%t, ", e.Int64())
	}
	bias := 0
	if c.Bias {
		bias = 1
	}
	consts := fmt.Sprintf(spectralConstants, c.WeightLen(), bias*c.OutChannels) +
		fmt.Sprintf(chainConstants, c.InputLen(), c.WeightLen(), lens.String(), finalLen(ch), "", ints.String(), bias, name)
	exe, seed, err := compile(ctx, cxx, dir, "#define EMU_CHAIN 1\n#define EMU_SPECTRAL 1\n"+shim+"\n"+k+driver+consts+torchShim+fwd+chainMain)
	if err != nil {
		return nil, err
	}
	return &ChainProgram{exe: exe, launch: plan.Launch{Spec: p.Spec.Name}, chain: ch, xLen: c.InputLen(), Seed: seed}, nil
}
