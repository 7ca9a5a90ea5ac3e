package tool

import "fmt"

// ErrorDiskFull: the disk under the database or the audit log is too full
// to take the write and keep its reserve; reads still work.
const ErrorDiskFull ErrorType = "disk_full"

// diskSlack is what any write needs beyond its content: the pages a
// bbolt commit touches and its audit record.
const diskSlack = 256 << 10

// DiskFullError refuses a write that would leave less than the reserve
// free: the reserve is kept so that the audit log and bbolt can still
// commit (reads and refusals are audited too), and so that a write is
// refused before it starts rather than failing half-way.
type DiskFullError struct {
	Free, Needed, Reserve int64
}

func (e *DiskFullError) Error() string {
	return fmt.Sprintf("disk_full: the disk holding the depot has %d bytes free; this write needs %d bytes and %d are kept in reserve",
		e.Free, e.Needed, e.Reserve)
}

// checkDisk refuses a write of n content bytes when the disk would keep
// less than Env.DiskReserve free. An error reading the free space lets the
// write through: the store then reports what happens.
func (g *Store) checkDisk(n int) error {
	env := g.rt.env
	if env.DiskFree == nil || env.DiskReserve <= 0 {
		return nil
	}
	free, err := env.DiskFree()
	if err != nil {
		return nil
	}
	needed := int64(n) + diskSlack
	if free-needed < env.DiskReserve {
		return &DiskFullError{Free: free, Needed: needed, Reserve: env.DiskReserve}
	}
	return nil
}
