module github.com/dablooms/dablooms/examples/dbfront

go 1.25.0

replace github.com/dablooms/dablooms => ../..

replace github.com/dablooms/dablooms/metrics => ../../metrics

require (
	github.com/dablooms/dablooms v0.0.0-00010101000000-000000000000
	github.com/dablooms/dablooms/metrics v0.0.0-00010101000000-000000000000
	github.com/prometheus/client_golang v1.24.1
	modernc.org/sqlite v1.59.0
)

require (
	github.com/beorn7/perks v1.0.1 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/dustin/go-humanize v1.0.1 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/mattn/go-isatty v0.0.24 // indirect
	github.com/munnerz/goautoneg v0.0.0-20191010083416-a7dc8b61c822 // indirect
	github.com/ncruces/go-strftime v1.0.0 // indirect
	github.com/prometheus/client_model v0.6.3 // indirect
	github.com/prometheus/common v0.71.0 // indirect
	github.com/prometheus/procfs v0.22.0 // indirect
	github.com/remyoudompheng/bigfft v0.0.0-20230129092748-24d4a6f8daec // indirect
	github.com/twmb/murmur3 v1.1.8 // indirect
	golang.org/x/sys v0.47.0 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
	modernc.org/libc v1.75.7 // indirect
	modernc.org/mathutil v1.7.1 // indirect
	modernc.org/memory v1.12.1 // indirect
)
