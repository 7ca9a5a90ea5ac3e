module github.com/depotfs/depotfs

go 1.26.8

require golang.org/x/text v0.43.0
