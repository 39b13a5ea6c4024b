package memdir

import "syscall"

// tmpfsMagic is statfs(2)'s f_type of a tmpfs (TMPFS_MAGIC).
const tmpfsMagic = 0x01021994

func isTmpfs(dir string, free uint64) bool {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return false
	}
	return st.Type == tmpfsMagic && st.Bavail*uint64(st.Bsize) >= free
}
