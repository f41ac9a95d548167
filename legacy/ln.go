package legacy

import (
	"math"
	"math/big"
)

// lnPrec is the working precision of ln, far above the 118 or so bits the hardest binary64
// logarithms need to be rounded correctly.
const lnPrec = 192

// ln2Big is ln 2 = 2·atanh(1/3) to lnPrec bits.
var ln2Big = func() *big.Float {
	third := new(big.Float).SetPrec(lnPrec).Quo(big.NewFloat(1), big.NewFloat(3))
	return twoAtanh(third)
}()

// ln returns the natural logarithm of a finite x > 0 rounded correctly to float64.
//
// The original computed its sizing with glibc's log, which is (as good as) correctly rounded;
// Go's math.Log is only accurate to within one ulp and differs from it in the last bit on some
// of the original's inputs. ln makes Layout independent of such differences.
func ln(x float64) float64 {
	m, e := math.Frexp(x) // x = m·2^e, m in [0.5, 1)
	if m < math.Sqrt2/2 {
		m, e = 2*m, e-1 // m in [√½, √2)
	}
	// ln m = 2·atanh((m-1)/(m+1)), with |(m-1)/(m+1)| <= 0.172.
	bm := new(big.Float).SetPrec(lnPrec).SetFloat64(m)
	one := big.NewFloat(1)
	z := new(big.Float).SetPrec(lnPrec).Sub(bm, one)
	z.Quo(z, new(big.Float).SetPrec(lnPrec).Add(bm, one))
	r := twoAtanh(z)
	r.Add(r, new(big.Float).SetPrec(lnPrec).Mul(ln2Big, big.NewFloat(float64(e))))
	f, _ := r.Float64()
	return f
}

// twoAtanh returns 2·atanh(z) = 2·Σ z^(2n+1)/(2n+1) for small |z|, to lnPrec bits.
func twoAtanh(z *big.Float) *big.Float {
	sum := new(big.Float).SetPrec(lnPrec)
	if z.Sign() == 0 {
		return sum
	}
	z2 := new(big.Float).SetPrec(lnPrec).Mul(z, z)
	pow := new(big.Float).SetPrec(lnPrec).Set(z)
	term := new(big.Float).SetPrec(lnPrec)
	for n := int64(1); ; n += 2 {
		term.Quo(pow, new(big.Float).SetInt64(n))
		sum.Add(sum, term)
		if term.MantExp(nil) < sum.MantExp(nil)-lnPrec-8 {
			break
		}
		pow.Mul(pow, z2)
	}
	return sum.Mul(sum, big.NewFloat(2))
}
