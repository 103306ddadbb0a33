package api

import (
	"github.com/gin-gonic/gin"
)

// workerView is one item of GET /api/workers.
type workerView struct {
	WorkerID   string   `json:"workerId"`
	InFlight   []string `json:"inFlight"`
	LastSeenAt string   `json:"lastSeenAt"`
}

// listWorkers is GET /api/workers: the workers this instance saw in the
// last hour, and every worker holding a pull job, with their in-flight ids.
func (s *Server) listWorkers(c *gin.Context) error {
	limit, cursor, err := listParams(c)
	if err != nil {
		return err
	}
	workers, err := s.cfg.Pull.Workers(c.Request.Context())
	if err != nil {
		return err
	}
	items := make([]workerView, len(workers))
	for i, w := range workers {
		items[i] = workerView{WorkerID: w.WorkerID, InFlight: w.InFlight, LastSeenAt: formatTime(w.LastSeenAt)}
	}
	// Sorted by worker id, so a worker keeps its place between polls.
	items, next := pageSorted(items, func(w workerView) string { return w.WorkerID }, false, limit, cursor)
	writePage(c, items, next)
	return nil
}
