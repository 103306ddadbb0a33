package api

import (
	"net/http"

	"github.com/gin-gonic/gin"
)

// Route is one registered route: its method and its path template
// ("/api/events/:id").
type Route struct {
	Method, Path string
}

// Routes returns every registered route, for documentation checks.
func (s *Server) Routes() []Route {
	rs := s.engine.Routes()
	out := make([]Route, len(rs))
	for i, r := range rs {
		out[i] = Route{Method: r.Method, Path: r.Path}
	}
	return out
}

func (s *Server) routes() {
	e := s.engine
	e.GET("/healthz", s.healthz)
	e.GET("/readyz", s.readyz)
	if !s.cfg.MetricsOnOwnListener {
		e.GET("/metrics", gin.WrapH(s.cfg.Metrics.Handler()))
	}
	if s.cfg.UI != nil {
		// The dashboard is a static site over the public API, not an API
		// operation, so openapi.json does not list it (routesOf builds the
		// server without it).
		e.GET("/ui", func(c *gin.Context) { c.Redirect(http.StatusMovedPermanently, "/ui/") })
		ui := gin.WrapH(http.StripPrefix("/ui", s.cfg.UI))
		e.GET("/ui/*path", ui)
		e.HEAD("/ui/*path", ui)
	}

	a := e.Group("/api")
	a.GET("/openapi.json", s.auth(RoleProducer, RoleWorker, RoleViewer), s.openAPI)
	a.POST("/events", s.auth(RoleProducer), s.h(s.postEvents))
	a.GET("/events", s.auth(RoleProducer, RoleViewer), s.h(s.listEvents))
	a.GET("/events/:id", s.auth(RoleProducer, RoleViewer), s.h(s.getEvent))

	a.POST("/event-types", s.auth(), s.h(s.createEventType))
	a.GET("/event-types", s.auth(RoleViewer), s.h(s.listEventTypes))
	a.GET("/event-types/:code", s.auth(RoleViewer), s.h(s.getEventType))
	a.PATCH("/event-types/:code", s.auth(), s.h(s.patchEventType))
	a.DELETE("/event-types/:code", s.auth(), s.h(s.deleteEventType))
	a.POST("/event-types/:code/versions", s.auth(), s.h(s.createVersion))
	a.GET("/event-types/:code/versions/:version", s.auth(RoleViewer), s.h(s.getVersion))
	a.PATCH("/event-types/:code/versions/:version", s.auth(), s.h(s.patchVersion))
	a.DELETE("/event-types/:code/versions/:version", s.auth(), s.h(s.deleteVersion))

	a.POST("/subscriptions", s.auth(), s.h(s.createSubscription))
	a.GET("/subscriptions", s.auth(RoleViewer), s.h(s.listSubscriptions))
	a.GET("/subscriptions/:id", s.auth(RoleViewer), s.h(s.getSubscription))
	a.PATCH("/subscriptions/:id", s.auth(), s.h(s.patchSubscription))
	a.DELETE("/subscriptions/:id", s.auth(), s.h(s.deleteSubscription))
	a.POST("/subscriptions/:id/pause", s.auth(), s.h(s.pauseSubscription))
	a.POST("/subscriptions/:id/resume", s.auth(), s.h(s.resumeSubscription))
	a.POST("/subscriptions/:id/rotate-secret", s.auth(), s.h(s.rotateSecret))
	a.GET("/subscriptions/:id/secret", s.auth(RoleViewer), s.h(s.getSecret))
	a.GET("/subscriptions/:id/health", s.auth(RoleViewer), s.h(s.getSubscriptionHealth))
	a.POST("/subscriptions/:id/replay", s.auth(), s.h(s.startReplay))
	a.GET("/subscriptions/:id/replays", s.auth(RoleViewer), s.h(s.listReplays))
	a.POST("/subscriptions/:id/transformation/test", s.auth(), s.h(s.testTransformation))
	a.GET("/replays/:id", s.auth(RoleViewer), s.h(s.getReplay))

	a.POST("/dispatch-pools", s.auth(), s.h(s.createPool))
	a.GET("/dispatch-pools", s.auth(RoleViewer), s.h(s.listPools))
	a.GET("/dispatch-pools/:id", s.auth(RoleViewer), s.h(s.getPool))
	a.PATCH("/dispatch-pools/:id", s.auth(), s.h(s.patchPool))
	a.DELETE("/dispatch-pools/:id", s.auth(), s.h(s.deletePool))

	a.POST("/dispatch-jobs", s.auth(RoleProducer), s.h(s.createTaskJob))
	a.GET("/dispatch-jobs", s.auth(RoleProducer, RoleViewer, RoleWorker), s.h(s.listJobs))
	a.POST("/dispatch-jobs/retry", s.auth(), s.h(s.bulkRetry))
	a.GET("/dispatch-jobs/:id", s.auth(RoleProducer, RoleViewer, RoleWorker), s.h(s.getJob))
	a.POST("/dispatch-jobs/:id/retry", s.auth(), s.h(s.retryJob))
	a.POST("/dispatch-jobs/:id/cancel", s.auth(), s.h(s.cancelJob))

	a.GET("/subscriptions/:id/jobs/next", s.auth(RoleWorker), s.h(s.claimJobs))
	a.POST("/dispatch-jobs/:id/complete", s.auth(RoleWorker), s.h(s.completeJob))
	a.POST("/dispatch-jobs/:id/fail", s.auth(RoleWorker), s.h(s.failJob))
	a.POST("/dispatch-jobs/:id/heartbeat", s.auth(RoleWorker), s.h(s.heartbeatJob))
	a.GET("/workers", s.auth(RoleWorker, RoleViewer), s.h(s.listWorkers))

	a.GET("/auth/whoami", s.auth(RoleProducer, RoleWorker, RoleViewer), s.h(s.whoami))
	a.POST("/event-types/:code/versions/:version/validate", s.auth(RoleProducer, RoleViewer), s.h(s.validateData))

	a.GET("/stream", s.auth(RoleViewer), s.h(s.streamSSE))
	a.GET("/stream/ws", s.auth(RoleViewer), s.h(s.streamWS))
	s.clientRoutes(a)
}
